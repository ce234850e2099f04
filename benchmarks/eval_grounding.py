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


def books_quality(runs: Path) -> dict[str, object]:
    from remark_data.matching import normalize_title

    scraped = CORPUS / "reddit/scraped/booksuggestions_2025-07"
    posts = json.loads((scraped / "reddit_booksuggestions_cleaned.json").read_text())
    reddit_id = {p["post_id"]: p["reddit_id"] for p in posts}
    gold = pl.read_csv(scraped / "verified_books_offline.csv").with_columns(
        pl.col("post_id").replace_strict(reddit_id, default=None).alias("request_id")
    )
    responses = pl.read_parquet(runs / "reddit_books/scrape/responses.parquet")
    groundings = pl.read_parquet(runs / "reddit_books/ground/groundings.parquet")
    catalog = pl.read_parquet(runs / "reddit_books/ground/catalog.parquet")
    found = (
        groundings.filter(pl.col("role") == "response", pl.col("item_id").is_not_null())
        .join(catalog.select("item_id", "title"), on="item_id")
        .join(responses.select("response_id", "text"), on="response_id")
    )
    keyed = lambda frame, column: frame.with_columns(  # noqa: E731
        pl.col(column).map_elements(normalize_title, return_dtype=pl.String).alias("key")
    )
    gold_pairs = keyed(
        gold.select("request_id", pl.col("comment").alias("text"), "verified_title"),
        "verified_title",
    )
    ours = keyed(found.select("request_id", "text", "title"), "title")
    ours_in_gold_comments = ours.join(
        gold_pairs.select("request_id", "text").unique(), on=["request_id", "text"]
    )
    true_positive = ours_in_gold_comments.join(
        gold_pairs, on=["request_id", "text", "key"], how="semi"
    )
    recalled = gold_pairs.join(ours, on=["request_id", "text", "key"], how="semi")
    misses = gold_pairs.join(ours, on=["request_id", "text", "key"], how="anti")
    wrong = ours_in_gold_comments.join(gold_pairs, on=["request_id", "text", "key"], how="anti")
    return {
        "gold_pairs": gold_pairs.height,
        "gold_comments_matched_to_our_responses": gold_pairs.join(
            ours.select("request_id", "text").unique(), on=["request_id", "text"], how="semi"
        ).height,
        "precision": true_positive.height / max(ours_in_gold_comments.height, 1),
        "recall": recalled.height / gold_pairs.height,
        "misses": misses.select("verified_title", "text"),
        "extra": wrong.select("title", "text"),
    }


def movies_quality(runs: Path) -> dict[str, object]:
    weak = pl.read_csv(
        CORPUS / "reddit/dumps/moviesuggestions_2020-09/raw/requests_with_suggestions@fa02843.csv"
    )
    weak = (
        weak.select(
            pl.col("id").alias("request_id"),
            pl.col("suggestions").str.split("%").alias("weak"),
        )
        .explode("weak")
        .drop_nulls("weak")
        .filter(pl.col("weak").str.starts_with("tt"))
    )
    labels = pl.read_parquet(runs / "reddit_movies/aggregate/labels.parquet")
    ours = (
        labels.select("request_id", pl.col("union_item_ids").alias("item"))
        .explode("item")
        .drop_nulls("item")
        .filter(pl.col("item").str.starts_with("imdb:"))
        .with_columns(pl.col("item").str.strip_prefix("imdb:").alias("weak"))
    )
    shared = set(weak["request_id"]) & set(labels["request_id"])
    weak = weak.filter(pl.col("request_id").is_in(shared))
    ours = ours.filter(pl.col("request_id").is_in(shared))
    agree = ours.join(weak, on=["request_id", "weak"], how="semi").height
    return {
        "requests_compared": len(shared),
        "weak_pairs": weak.height,
        "our_pairs_with_imdb_ids": ours.height,
        "agreement_over_ours": agree / max(ours.height, 1),
        "agreement_over_weak": agree / max(weak.height, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = run_pipelines(Path(tmp), ["reddit_books", "reddit_movies"])
        books = books_quality(runs)
        movies = movies_quality(runs)
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


if __name__ == "__main__":
    main()
