"""Reddit scraped by third-party tools, without author ids: every comment is its own responder,
flagged ``no_author_ids`` (two comments of one person count twice, so n_x is an upper bound).
Empty comments and ``[deleted]`` / ``[removed]`` ones say nothing and are dropped (the latter
counted as ``deleted_bodies``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.errors import RemarkError
from remark_data.stages.scrape import ScrapedSource, empty, requests_table, says_nothing


def _source(
    posts: list[tuple[str, str]],
    comments: list[tuple[str, str, str]],
    *,
    dataset: str,
    source: str,
    split: str,
) -> ScrapedSource:
    requests = pl.DataFrame(
        posts, schema={"request_id": pl.String, "prompt": pl.String}, orient="row"
    )
    responses = pl.DataFrame(
        comments,
        schema={"request_id": pl.String, "response_id": pl.String, "text": pl.String},
        orient="row",
    ).filter(pl.col("text").str.strip_chars() != "")
    deleted = responses.filter(says_nothing("text")).height
    responses = responses.filter(~says_nothing("text"))
    return ScrapedSource(
        requests=requests_table(requests, dataset=dataset, source=source, split=split),
        responses=responses.select(
            pl.lit(dataset).alias("dataset"),
            "request_id",
            "response_id",
            pl.int_range(pl.len()).over("request_id").alias("responder_index"),
            pl.col("response_id").alias("responder_id"),
            "text",
            pl.lit("no_author_ids").alias("responder_flag"),
        ),
        mentions=empty("mentions"),
        counters={
            "posts": requests.height,
            "comments": responses.height,
            "deleted_bodies": deleted,
        },
    )


def read_booksuggestions(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    """``reddit_booksuggestions_cleaned.json``: posts with `reddit_id`, `title`, `comments`."""
    try:
        posts: list[dict[str, Any]] = json.loads(path.read_text())
        # The scrape lists a post once per search keyword that found it: keep it once.
        requests = list({p["reddit_id"]: (p["reddit_id"], p["title"]) for p in posts}.values())
        comments = list(
            {
                c["comment_id"]: (
                    p["reddit_id"],
                    f"{p['reddit_id']}/{c['comment_id']}",
                    c.get("text") or "",
                )
                for p in posts
                for c in p.get("comments", [])
            }.values()
        )
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise RemarkError(f"{path}: not the r/booksuggestions scrape format ({exc})") from exc
    scraped = _source(requests, comments, dataset=dataset, source=source, split=split)
    scraped.counters["duplicate_posts"] = len(posts) - len(requests)
    return scraped


def read_suggestmeabook(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    """``posts.jsonl``: {title, body, comments: [text]}; ids are hashes of title + body."""
    requests, comments = [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            post = json.loads(line)
            text = f"{post['title']}\n\n{post.get('body') or ''}".strip()
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise RemarkError(f"{path}:{number}: not a suggestmeabook post ({exc})") from exc
        request_id = "smab-" + hashlib.sha256(text.encode()).hexdigest()[:12]
        requests.append((request_id, text))
        comments += [
            (request_id, f"{request_id}/c{i}", c) for i, c in enumerate(post.get("comments") or [])
        ]
    return _source(requests, comments, dataset=dataset, source=source, split=split)
