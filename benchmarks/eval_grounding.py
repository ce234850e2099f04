"""Grounding quality against the real (partial, noisy) gold in the corpus.

- Books: `verified_books_offline.csv` — 302 comment titles the source project matched to
  goodbooks-10k. Per gold comment, our grounded goodbooks items are compared with its verified
  title(s). The gold is partial (a comment may name books it does not list), so precision is a
  lower bound.
- Movies: `requests_with_suggestions@fa02843.csv` — IMDb ids per r/MovieSuggestions request from
  the source project's phrase matcher: weak labels, noisy in both directions; a rough check only.

    python benchmarks/eval_grounding.py [--misses 15]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import polars as pl

from remark_data.evaluate.corpus_checks import books_quality, movies_quality

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"


def run_pipelines(root: Path, names: list[str]) -> Path:
    from remark_data.config import Project, load_pipeline_spec
    from remark_data.pipeline import PipelineRun

    shutil.copytree(REPO / "pipelines", root / "pipelines")
    (root / "data").mkdir()
    shutil.copy(REPO / "data" / "sources.toml", root / "data" / "sources.toml")
    project = Project(root=root, mirror=CORPUS)
    for name in names:
        PipelineRun(spec=load_pipeline_spec(project.pipeline_path(name)), project=project).run()
    return project.runs_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = run_pipelines(Path(tmp), ["reddit_books", "reddit_movies"])
        books = books_quality(runs, corpus=CORPUS)
        movies = movies_quality(runs, corpus=CORPUS)
        grounding = pl.read_parquet(runs / "reddit_movies/ground/groundings.parquet")[
            "status"
        ].value_counts()
    print(
        f"books vs verified_books_offline.csv: {books['gold_pairs']} gold (comment, title) pairs, "
        f"{books['gold_comments_matched_to_our_responses']} in comments we read"
    )
    print(
        f"  precision {books['precision']:.3f} (lower bound: partial gold), "
        f"recall {books['recall']:.3f}"
    )
    with pl.Config(fmt_str_lengths=90, tbl_rows=args.misses):
        print("  misses:", books["misses"].head(args.misses))
        print("  not in gold:", books["extra"].head(args.misses))
    print(
        f"movies vs weak IMDb labels: {movies['requests_compared']} requests, "
        f"{movies['weak_pairs']} weak pairs, {movies['our_pairs_with_imdb_ids']} of ours"
    )
    print(
        f"  agreement / ours {movies['agreement_over_ours']:.3f}, "
        f"/ weak {movies['agreement_over_weak']:.3f}"
    )
    print("movie mention statuses:", dict(grounding.iter_rows()))
    summary = {
        "bench": "grounding_quality",
        "books_precision": round(books["precision"], 4),
        "books_recall": round(books["recall"], 4),
        "movies_agreement_over_ours": round(movies["agreement_over_ours"], 4),
        "movies_agreement_over_weak": round(movies["agreement_over_weak"], 4),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
