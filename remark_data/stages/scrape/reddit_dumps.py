"""Reddit dumps (Pushshift / Arctic-Shift NDJSON: .zst with 2 GiB windows, .gz or plain) → threads.

Dumps are streamed (`remark_data.stages.scrape.dumps`); malformed lines, records without an id,
duplicate ids (first kept) and orphan comments are counted and quarantined. A truncated or
corrupt ``.zst`` / ``.gz`` is an error naming the compressed byte offset, never a silently
shorter dump.

A thread's responders are the distinct authors other than the OP, bots and ``[deleted]`` /
``[removed]``; one author's several comments are one responder; a comment with a null author is
its own responder, flagged ``null_author``. Comments whose body is ``[deleted]`` / ``[removed]``
or empty say nothing and are dropped first (counted as ``deleted_bodies`` / ``empty_bodies``), so
an author with only such comments is no responder.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field

from remark_data.errors import RemarkError
from remark_data.stages.scrape import (
    ScrapedSource,
    SourceFormat,
    empty,
    requests_table,
    responses_table,
    says_nothing,
)
from remark_data.stages.scrape.dumps import Quarantine, read_dump
from remark_data.stages.scrape.spec import SourceSpec, SpecModel

DELETED_AUTHORS = ("[deleted]", "[removed]")

SUBMISSION_SCHEMA: dict[str, Any] = {
    "id": pl.String,
    "author": pl.String,
    "title": pl.String,
    "selftext": pl.String,
    "subreddit": pl.String,
    "created_utc": pl.Int64,
}
COMMENT_SCHEMA: dict[str, Any] = {
    "id": pl.String,
    "author": pl.String,
    "body": pl.String,
    "parent_id": pl.String,
    "link_id": pl.String,
    "subreddit": pl.String,
    "created_utc": pl.Int64,
    "is_submitter": pl.Boolean,
}


class ThreadOptions(SpecModel):
    """Which threads and comments of a dump to keep."""

    subreddits: list[str] = Field(default_factory=list)
    since: date | None = None
    until: date | None = None
    include_replies: bool = Field(default=False, description="Keep replies, not only top level.")
    bots: list[str] = Field(
        default=["AutoModerator"], description="Authors that are not responders."
    )


class RedditDump(SourceSpec, ThreadOptions):
    """A pair of dump files, submissions and comments, with the thread options."""

    format: Literal["reddit_dump"]
    roles: ClassVar[tuple[str, ...]] = ("submissions", "comments")


def _drop_without_id(frame: pl.DataFrame, quarantine: Quarantine, kind: str) -> pl.DataFrame:
    """Records without an id cannot be told apart (all would be "duplicates" of one another)."""
    missing = pl.col("id").is_null() | (pl.col("id").str.strip_chars() == "")
    lost = frame.filter(missing)
    quarantine.add(
        f"{kind} without id", lost.height, [str(row) for row in lost.head(20).iter_rows(named=True)]
    )
    return frame.filter(~missing)


def _first_of_each_id(frame: pl.DataFrame, quarantine: Quarantine, kind: str) -> pl.DataFrame:
    duplicated = frame.filter(pl.col("id").is_duplicated() & ~pl.col("id").is_first_distinct())
    quarantine.add(f"duplicate {kind} id", duplicated.height, duplicated["id"].to_list())
    return frame.unique("id", keep="first", maintain_order=True)


def unescape_html(column: str) -> pl.Expr:
    """Reddit bodies are HTML-escaped, sometimes twice (``&amp;#x200B;``): unescape until stable."""

    def fix(text: str | None) -> str | None:
        if text is None or "&" not in text:
            return text
        previous = None
        while previous != text:
            previous, text = text, html.unescape(text)
        return text.replace("\u200b", "").strip()

    return pl.col(column).map_elements(fix, return_dtype=pl.String, skip_nulls=True)


def epoch(day: date | None) -> int | None:
    return (
        None if day is None else int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    )


def _thread_comments(
    submissions: pl.DataFrame,
    comments: pl.DataFrame,
    *,
    options: ThreadOptions,
    quarantine: Quarantine,
) -> pl.DataFrame:
    """The comments of the kept threads (top level only unless `include_replies`), with the
    thread's `request_id` and its OP's name as `op`; orphans are quarantined."""
    comments = comments.with_columns(pl.col("link_id").str.strip_prefix("t3_").alias("request_id"))
    orphans = comments.join(
        submissions.select(pl.col("id").alias("request_id")), on="request_id", how="anti"
    )
    quarantine.add("orphan comment (no submission)", orphans.height, orphans["id"].to_list())
    comments = comments.join(
        submissions.select(pl.col("id").alias("request_id"), pl.col("author").alias("op")),
        on="request_id",
    )
    if not options.include_replies:
        comments = comments.filter(pl.col("parent_id") == pl.col("link_id"))
    return comments


def _responses(said: pl.DataFrame, *, options: ThreadOptions, dataset: str) -> pl.DataFrame:
    """One response per (thread, responder): their comments' bodies in time order."""
    excluded = [*DELETED_AUTHORS, *options.bots]
    responders = said.filter(
        ~pl.col("author").is_in(excluded).fill_null(False)
        & ~(pl.col("author") == pl.col("op")).fill_null(False)
        & ~pl.col("is_submitter").fill_null(False)
    ).with_columns(
        pl.when(pl.col("author").is_null())
        .then(pl.format("null:{}", "id"))
        .otherwise(pl.col("author"))
        .alias("responder_id"),
        unescape_html("body").alias("body"),
    )
    return (
        responders.sort("request_id", "created_utc", "id", nulls_last=True)
        .group_by("request_id", "responder_id", maintain_order=True)
        .agg(
            pl.col("body").str.join("\n\n").alias("text"),
            pl.col("author").is_null().any().alias("null_author"),
            pl.col("id").alias("comment_ids"),
            # Each body and the blank line after it: where the next comment starts in `text`.
            (pl.col("body").str.len_chars() + 2)
            .cum_sum()
            .shift(1, fill_value=0)
            .cast(pl.Int64)
            .alias("comment_starts"),
            pl.col("created_utc").max(),
        )
        .with_columns(
            pl.format("{}/{}", "request_id", "responder_id").alias("response_id"),
            pl.int_range(pl.len()).over("request_id").alias("responder_index"),
        )
        .pipe(
            responses_table,
            dataset=dataset,
            text=pl.col("text"),
            responder_id=pl.col("responder_id"),
            flag=pl.when(pl.col("null_author")).then(pl.lit("null_author")),
            comment_ids=pl.col("comment_ids"),
            comment_starts=pl.col("comment_starts"),
            created_utc=pl.col("created_utc"),
        )
    )


def _requests(submissions: pl.DataFrame, *, dataset: str, source: str, split: str) -> pl.DataFrame:
    return (
        submissions.select(
            pl.col("id").alias("request_id"),
            unescape_html("title").alias("title"),
            unescape_html("selftext").alias("selftext"),
        )
        .select(
            "request_id",
            pl.concat_str(pl.col("title"), pl.col("selftext").fill_null(""), separator="\n\n")
            .str.strip_chars()
            .alias("prompt"),
        )
        .pipe(requests_table, dataset=dataset, source=source, split=split)
    )


def read_reddit_dump(
    submissions_path: Path,
    comments_path: Path,
    *,
    dataset: str,
    source: str,
    split: str,
    options: ThreadOptions,
) -> ScrapedSource:
    """Requests (submissions) and responders (comment authors) from a pair of dump files."""
    quarantine = Quarantine()
    submissions = read_dump(
        submissions_path,
        SUBMISSION_SCHEMA,
        quarantine=quarantine,
        subreddits=options.subreddits,
        since=epoch(options.since),
        until=epoch(options.until),
    )
    comments = read_dump(
        comments_path, COMMENT_SCHEMA, quarantine=quarantine, subreddits=options.subreddits
    )
    if submissions.is_empty():
        raise RemarkError(
            f"{submissions_path}: no submission of {options.subreddits} in the time range"
        )
    return build_threads(
        submissions,
        comments,
        quarantine=quarantine,
        dataset=dataset,
        source=source,
        split=split,
        options=options,
    )


def build_threads(
    submissions: pl.DataFrame,
    comments: pl.DataFrame,
    *,
    quarantine: Quarantine,
    dataset: str,
    source: str,
    split: str,
    options: ThreadOptions,
) -> ScrapedSource:
    """Requests and responses from the filtered submission and comment records of dumps."""
    submissions = _drop_without_id(submissions, quarantine, "submission")
    comments = _drop_without_id(comments, quarantine, "comment")
    submissions = _first_of_each_id(submissions, quarantine, "submission")
    comments = _thread_comments(
        submissions,
        _first_of_each_id(comments, quarantine, "comment"),
        options=options,
        quarantine=quarantine,
    )
    empty_body = pl.col("body").str.strip_chars().fill_null("") == ""
    said = comments.filter(~says_nothing("body") & ~empty_body)
    return ScrapedSource(
        requests=_requests(submissions, dataset=dataset, source=source, split=split),
        responses=_responses(said, options=options, dataset=dataset),
        mentions=empty("mentions"),
        counters={
            "submissions": submissions.height,
            "comments": comments.height,
            "deleted_bodies": comments.filter(says_nothing("body")).height,
            "empty_bodies": comments.filter(empty_body).height,
            **{f"quarantined.{k}": v for k, v in quarantine.counts.items()},
        },
        quarantine=quarantine.samples,
    )


def _read(source: RedditDump, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_reddit_dump(
        files["submissions"],
        files["comments"],
        dataset=dataset,
        source=source.name,
        split=source.split,
        options=source,
    )


FORMATS = (SourceFormat(spec=RedditDump, read=_read),)
