"""Reddit scraped by third-party tools, without author ids: every comment is its own responder,
flagged ``no_author_ids`` (two comments of one person count twice, so n_x is an upper bound).
Empty comments and ``[deleted]`` / ``[removed]`` ones say nothing and are dropped (the latter
counted as ``deleted_bodies``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl

from remark_data.errors import RemarkError
from remark_data.stages.scrape import (
    ScrapedSource,
    SourceFormat,
    empty,
    read_jsonl,
    requests_table,
    responses_table,
    says_nothing,
)
from remark_data.stages.scrape.spec import SourceSpec


def _source(
    posts: list[tuple[str, str]],
    comments: list[tuple[str, str, str, str]],
    *,
    dataset: str,
    source: str,
    split: str,
) -> ScrapedSource:
    """`comments`: (request_id, response_id, comment_id, text), each comment a responder."""
    requests = pl.DataFrame(
        posts, schema={"request_id": pl.String, "prompt": pl.String}, orient="row"
    )
    schema = ["request_id", "response_id", "comment_id", "text"]
    responses = pl.DataFrame(comments, schema=schema, orient="row").filter(
        pl.col("text").str.strip_chars() != ""
    )
    deleted = responses.filter(says_nothing("text")).height
    responses = responses.filter(~says_nothing("text"))
    return ScrapedSource(
        requests=requests_table(requests, dataset=dataset, source=source, split=split),
        responses=responses.with_columns(
            pl.int_range(pl.len()).over("request_id").alias("responder_index")
        ).pipe(
            responses_table,
            dataset=dataset,
            text=pl.col("text"),
            flag=pl.lit("no_author_ids"),
            comment_ids=pl.concat_list("comment_id"),
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
                    c["comment_id"],  # the reddit id of the comment
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


def _post(post: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(request_id, prompt, comments) of one post; the id is a hash of title and body."""
    text = f"{post['title']}\n\n{post.get('body') or ''}".strip()
    return (
        "smab-" + hashlib.sha256(text.encode()).hexdigest()[:12],
        text,
        post.get("comments") or [],
    )


def read_suggestmeabook(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    """``posts.jsonl``: {title, body, comments: [text]}; ids are hashes of title + body."""
    posts = list(read_jsonl(path, _post, what="a suggestmeabook post"))
    requests = [(request_id, text) for request_id, text, _ in posts]
    comments = [
        (request_id, f"{request_id}/c{i}", f"{request_id}/c{i}", comment)  # no reddit ids
        for request_id, _, texts in posts
        for i, comment in enumerate(texts)
    ]
    return _source(requests, comments, dataset=dataset, source=source, split=split)


class BookSuggestions(SourceSpec):
    """The r/booksuggestions scrape: one JSON list of posts with their comments."""

    format: Literal["booksuggestions_json"]
    roles: ClassVar[tuple[str, ...]] = ("posts",)


class SuggestMeABook(SourceSpec):
    """The r/suggestmeabook scrape: JSONL, a post with its comment texts per line."""

    format: Literal["suggestmeabook_jsonl"]
    roles: ClassVar[tuple[str, ...]] = ("posts",)


def _read_booksuggestions(
    source: BookSuggestions, files: Mapping[str, Path], *, dataset: str
) -> ScrapedSource:
    return read_booksuggestions(
        files["posts"], dataset=dataset, source=source.name, split=source.split
    )


def _read_suggestmeabook(
    source: SuggestMeABook, files: Mapping[str, Path], *, dataset: str
) -> ScrapedSource:
    return read_suggestmeabook(
        files["posts"], dataset=dataset, source=source.name, split=source.split
    )


FORMATS = (
    SourceFormat(spec=BookSuggestions, read=_read_booksuggestions),
    SourceFormat(spec=SuggestMeABook, read=_read_suggestmeabook),
)
