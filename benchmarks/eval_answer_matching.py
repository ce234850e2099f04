"""Leave-one-string-out on ProtoQA's dev answer clusters: each clustered answer string is
matched, through the trainers' matcher, against its question's clusters built without it.

    python benchmarks/eval_answer_matching.py

Right: the string grounds to its own cluster; false: to another cluster; missed: to none. This
measures the matcher the trainers and `remark diagnose` share, from the data alone (no human
judgements needed). The last line is one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remark_data.config import load_pipeline_spec
from remark_data.pipeline import PipelineRun
from remark_data.runner import RunFolder
from remark_data.stages.ground.matching import MATCH_STEPS, MatchStep, TitleMatcher
from tests.conftest import make_project


def leave_one_out(clusters: pl.DataFrame, steps: tuple[MatchStep, ...]) -> dict[str, int]:
    """`clusters`: scope (question), item_id, title, aliases (its answer strings)."""
    counts = {"right": 0, "false": 0, "missed": 0}
    for (_,), question in clusters.partition_by("scope", as_dict=True).items():
        items = question.select("item_id", "title", "aliases").rows()
        for item_id, title, aliases in items:
            strings = list(dict.fromkeys([title, *aliases]))
            if len(strings) < 2:
                continue  # nothing left to match a lone string against
            for held_out in strings:
                rest = [s for s in strings if s != held_out]
                others = [(i, t, None) for i, t, _ in items if i != item_id]
                matcher = TitleMatcher(
                    [(item_id, rest[0], None), *others],
                    aliases=[(item_id, s) for s in rest[1:]]
                    + [(i, a) for i, _, al in items if i != item_id for a in al],
                    steps=steps,
                )
                found = matcher.match(held_out)
                key = "missed" if found is None else "right" if found == item_id else "false"
                counts[key] += 1
    return counts


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "p")
        PipelineRun(spec=load_pipeline_spec(project.pipeline_path("protoqa")), project=project).run(
            stages=("scrape",)
        )
        catalog = RunFolder(project.runs_dir / "protoqa").read("scrape", "catalog")
    dev = catalog.filter(~pl.col("scope").str.starts_with("train_"))
    result: dict[str, object] = {"bench": "answer_matching_loo"}
    for n in range(1, len(MATCH_STEPS) + 1):
        steps = MATCH_STEPS[:n]
        counts = leave_one_out(dev, steps)
        total = sum(counts.values())
        name = "+".join(steps)
        print(f"{name:>24}: accuracy {counts['right'] / total:.3f}, false matches "
              f"{counts['false'] / total:.3f}, missed {counts['missed'] / total:.3f} "
              f"({total} held-out strings of {dev.height} dev clusters)")  # fmt: skip
        result[name] = {"accuracy": round(counts["right"] / total, 4),
                        "false_match_share": round(counts["false"] / total, 4)}  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
