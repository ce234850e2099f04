"""Held-out answer strings on ProtoQA's dev clusters, matched through the trainers' matcher
chain one step at a time.

    python benchmarks/eval_answer_matching.py

Two measures from the data alone (no human judgements needed):
- leave one string out: each clustered answer string is matched against its question's
  clusters built without it. Right: it grounds to its own cluster; false: to another; missed.
- leave one cluster out: each string of a cluster is matched against its question's other
  clusters, as an answer no cluster holds (a new valid answer, or an invalid one) would be.
  Any match is false.
The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remark_data.config import load_pipeline_spec
from remark_data.pipeline import PipelineRun
from remark_data.runner import RunFolder
from remark_data.stages.ground.matching import MATCH_STEPS, MatchStep, TitleMatcher
from tests.conftest import make_project

CLUSTER_COLUMNS = ["item_id", "title", "aliases"]
# The question's text (the matcher's context), then (cluster id, its distinct answer strings).
Question = tuple[str, list[tuple[str, list[str]]]]


def questions(clusters: pl.DataFrame, prompts: dict[str, str]) -> list[Question]:
    """`clusters`: scope (question), item_id, title, aliases (its answer strings)."""
    return [
        (
            prompts[q["scope"][0]],
            [(i, list(dict.fromkeys([t, *a]))) for i, t, a in q.select(CLUSTER_COLUMNS).rows()],
        )
        for q in clusters.partition_by("scope")
    ]


def _matcher(
    names: list[tuple[str, str]], steps: tuple[MatchStep, ...], context: str
) -> TitleMatcher:
    return TitleMatcher([(i, n, None) for i, n in names], steps=steps, context=context)


def leave_one_out(data: list[Question], steps: tuple[MatchStep, ...]) -> dict[str, int]:
    counts = {"right": 0, "false": 0, "missed": 0}
    for context, question in data:
        for cluster_id, strings in question:
            if len(strings) < 2:
                continue  # nothing left to match a lone string against
            others = [(i, s) for i, ss in question if i != cluster_id for s in ss]
            for held_out in strings:
                rest = [(cluster_id, s) for s in strings if s != held_out]
                found = _matcher(rest + others, steps, context).match(held_out)
                key = "missed" if found is None else "right" if found == cluster_id else "false"
                counts[key] += 1
    return counts


def leave_cluster_out(data: list[Question], steps: tuple[MatchStep, ...]) -> dict[str, int]:
    counts = {"false": 0, "unmatched": 0}
    for context, question in data:
        for cluster_id, strings in question:
            others = [(i, s) for i, ss in question if i != cluster_id for s in ss]
            matcher = _matcher(others, steps, context)
            for held_out in strings:
                counts["unmatched" if matcher.match(held_out) is None else "false"] += 1
    return counts


def dev_questions() -> list[Question]:
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "p")
        spec = load_pipeline_spec(project.pipeline_path("protoqa"))
        PipelineRun(spec=spec, project=project).run(stages=("scrape",))
        folder = RunFolder(project.runs_dir / "protoqa")
        catalog, requests = folder.read("scrape", "catalog"), folder.read("scrape", "requests")
    prompts = dict(requests.select("request_id", "prompt").iter_rows())
    return questions(catalog.filter(~pl.col("scope").str.starts_with("train_")), prompts)


def main() -> None:
    data = dev_questions()
    result: dict[str, object] = {"bench": "answer_matching"}
    print("| match_steps | held-out strings: accuracy | false | missed "
          "| held-out clusters: false | seconds |")  # fmt: skip
    for n in range(1, len(MATCH_STEPS) + 1):
        steps = MATCH_STEPS[:n]
        started = time.perf_counter()
        one = leave_one_out(data, steps)
        whole = leave_cluster_out(data, steps)
        seconds = time.perf_counter() - started
        total, novel = sum(one.values()), sum(whole.values())
        row = {
            "accuracy": round(one["right"] / total, 4),
            "false_match_share": round(one["false"] / total, 4),
            "missed_share": round(one["missed"] / total, 4),
            "novel_false_match_share": round(whole["false"] / novel, 4),
        }
        print(f"| {' + '.join(steps)} | {row['accuracy']:.3f} | {row['false_match_share']:.3f} | "
              f"{row['missed_share']:.3f} | {row['novel_false_match_share']:.3f} | "
              f"{seconds:.1f} |")  # fmt: skip
        result["+".join(steps)] = row
    print(
        f"({total} held-out strings, {novel} strings of held-out clusters, {len(data)} questions)"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
