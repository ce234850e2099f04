"""Gazetteer, LLM and hybrid extraction side by side on the movies dev gold, through `remark eval`.

    python benchmarks/eval_extractors.py [--variants gazetteer llm-0.5b hybrid-0.5b ...]

Input: the 28 r/MovieSuggestions threads of `tests/data/movies_dev_gold.jsonl` with their 299
labelled top-level comments only (real records filtered from the corpus dump), so the union
labels of a run are the union of the labelled comments and `remark eval`'s label level is
end-to-end. Each variant runs scrape → extract → ground → aggregate in its own project (a fresh
LLM cache) against the real llama-server (Qwen2.5-Coder 0.5B or 1.5B, Q4_K_M, 2 threads,
4 slots, concurrency 4; `scripts/install_llm.sh`, the 1.5B with REMARK_LLM_MODELS="1.5b").
Stance agreement: of the gold titles a run also finds (same comment, same normalised surface),
the share where both say recommended or both say not. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GOLD = REPO / "tests/data/movies_dev_gold.jsonl"
DUMP = REPO.parent / "shared/corpus/reddit/dumps/moviesuggestions_2020-09/ndjson"
MODELS = {
    "0.5b": REPO / "data/cache/llm-models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "1.5b": REPO / "data/cache/llm-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
}
VARIANTS = ("gazetteer", "llm-0.5b", "hybrid-0.5b", "hybrid-0.5b-fewshot", "hybrid-1.5b",
            "hybrid-1.5b-fewshot", "llm-1.5b")  # fmt: skip


def subset_dump(folder: Path, gold: list[dict[str, Any]]) -> None:
    """The gold threads' submissions and labelled comments, as real NDJSON records."""
    requests = {g["request_id"] for g in gold}
    comments = {g["comment_id"] for g in gold}
    for name, ids in (("submissions", requests), ("comments", comments)):
        source = DUMP / f"MovieSuggestions_{name}.ndjson"
        kept = [line for line in source.read_text().splitlines() if json.loads(line)["id"] in ids]
        (folder / f"{name}.ndjson").write_text("\n".join(kept) + "\n")


def spec_text(folder: Path, variant: str, base_url: str) -> str:
    method, *rest = variant.split("-")
    spec = (REPO / "pipelines/reddit_movies.toml").read_text()
    catalog = spec[spec.index("[catalog]") : spec.index("[extract]")]
    ground = spec[spec.index("[ground]") : spec.index("[stats]")]
    text = f"""name = "reddit_movies"
[[sources]]
name = "gold-threads"
format = "reddit_dump"
split = "train"
paths = {{ submissions = "{folder}/submissions.ndjson", comments = "{folder}/comments.ndjson" }}
subreddits = ["MovieSuggestions"]
bots = ["AutoModerator", "cinephile_bot"]

{catalog}
[extract]
method = "{method}"
kinds = ["movie"]
seen = true
{ground}"""
    if method != "gazetteer":
        text += f"""
[extract.llm]
base_url = "{base_url}"
model = "qwen2.5-coder-{rest[0]}"
timeout = 600
concurrency = 4
few_shot = {"true" if rest[1:] == ["fewshot"] else "false"}
"""
    return text


def stance_agreement(project: Any, gold: list[dict[str, Any]]) -> tuple[float, int]:
    import polars as pl

    from remark_data.runner import RunFolder
    from remark_data.stages.ground.matching import normalize_title

    mentions = RunFolder(project.runs_dir / "reddit_movies").read("extract", "mentions")
    ours = {
        (c, normalize_title(s)): stance
        for c, s, stance in mentions.filter(pl.col("role") == "response")
        .select("comment_id", "surface", "stance")
        .iter_rows()
    }
    both = [
        (t["stance"] == "recommended") == (ours[key] == "recommended")
        for g in gold
        for t in g["titles"]
        if (key := (g["comment_id"], normalize_title(t["surface"]))) in ours
    ]
    return (sum(both) / len(both) if both else float("nan")), len(both)


def run_variant(variant: str, folder: Path, base_url: str, gold: list[dict[str, Any]]) -> dict:
    from remark_data.config import Project, load_pipeline_spec
    from remark_data.evaluate.run import evaluate_run
    from remark_data.pipeline import PipelineRun
    from remark_data.runner import RunFolder
    from tests.conftest import CORPUS, make_project

    project: Project = make_project(folder / variant)
    path = project.root / "pipelines" / "gold_threads.toml"
    path.write_text(spec_text(folder, variant, base_url))
    started = time.perf_counter()
    PipelineRun(spec=load_pipeline_spec(path), project=project).run(
        stages=("scrape", "extract", "ground", "aggregate")
    )
    seconds = time.perf_counter() - started
    assert project.mirror == CORPUS
    report = evaluate_run(project, "reddit_movies", gold=GOLD, draws=1000)
    levels = {r["level"]: r for r in report.iter_rows(named=True)}
    manifest = RunFolder(project.runs_dir / "reddit_movies").manifest("extract")
    counters = dict(manifest.counters) if manifest else {}
    agreement, shared = stance_agreement(project, gold)
    return {"variant": variant, "seconds": round(seconds, 1), "counters": counters,
            "stance_agreement": round(agreement, 3), "stance_shared": shared,
            **{f"{level}_{m}": round(r[m], 3) for level, r in levels.items()
               for m in ("precision", "recall", "precision_low", "precision_high",
                         "recall_low", "recall_high") if m in r}}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args()
    from tests.llm_servers import LlamaServer

    gold = [json.loads(line) for line in GOLD.read_text().splitlines()]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        subset_dump(folder, gold)
        for size in ("gazetteer", "0.5b", "1.5b"):
            chosen = [v for v in args.variants if (size in v) or (v == size)]
            if not chosen:
                continue
            if size == "gazetteer":
                rows += [run_variant(v, folder, "", gold) for v in chosen]
                continue
            with LlamaServer(threads=2, parallel=4, model=MODELS[size]) as server:
                rows += [run_variant(v, folder, server.url, gold) for v in chosen]
            for row in rows[-len(chosen) :]:
                print(json.dumps(row), flush=True)
    print("| variant | label P [95%] | label R [95%] | comment P | comment R | stance agreement "
          "| requests | skipped comments | wall s | req/s |")  # fmt: skip
    for r in rows:
        c = r["counters"]
        rate = c.get("requests", 0) / r["seconds"] if c.get("requests") else 0.0
        print(f"| {r['variant']} | {r['label_precision']:.3f} [{r['label_precision_low']:.3f}, "
              f"{r['label_precision_high']:.3f}] | {r['label_recall']:.3f} "
              f"[{r['label_recall_low']:.3f}, {r['label_recall_high']:.3f}] | "
              f"{r.get('comment_precision', float('nan')):.3f} | "
              f"{r.get('comment_recall', float('nan')):.3f} | {r['stance_agreement']:.3f} "
              f"({r['stance_shared']}) | {c.get('requests', 0)} | {c.get('comments_skipped', '-')} "
              f"| {r['seconds']:.0f} | {rate:.2f} |")  # fmt: skip
    print(json.dumps({"bench": "extractors", "rows": rows}))


if __name__ == "__main__":
    main()
