"""Label quality against the partial gold shipped with the corpus (used by the tests'
regression floors and `benchmarks/eval_grounding.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from remark_data.stages.ground.matching import normalize_title


def books_quality(runs: Path, *, corpus: Path) -> dict[str, object]:
    """Our grounded goodbooks titles per gold comment vs the corpus's `verified_books_offline.csv`
    (302 (comment, title) pairs the source project verified; partial, so precision is a lower
    bound). `runs` is a project's ``data/runs`` with `reddit_books` run."""
    scraped = corpus / "reddit/scraped/booksuggestions_2025-07"
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


def movies_quality(runs: Path, *, corpus: Path) -> dict[str, object]:
    """Agreement of our `reddit_movies` union IMDb ids with the source project's phrase-matcher
    ids per request (`requests_with_suggestions@fa02843.csv`): weak labels, a rough check."""
    weak = pl.read_csv(
        corpus / "reddit/dumps/moviesuggestions_2020-09/raw/requests_with_suggestions@fa02843.csv"
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
