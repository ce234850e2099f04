"""Stage 1, scrape: bring requests, responders and their (pre-extracted) mentions in.

Every reader module declares its formats as `SourceFormat` records (``FORMATS``) and is listed
once in `remark_data.stages.scrape.formats`; its readers return a `ScrapedSource`, which the
scrape stage concatenates over a pipeline's sources. Readers build answer-level frames and
expand them in polars, never row by row, with the shared table builders below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import polars as pl

from remark_data.errors import RemarkError
from remark_data.schemas import TABLES, polars_schema
from remark_data.stages.scrape.spec import SourceSpec, format_names

# Reddit's placeholders for a comment whose text is gone: such a comment says nothing, so it
# must not make its author a responder.
DELETED_BODIES = ("[deleted]", "[removed]")


def says_nothing(column: str) -> pl.Expr:
    """True where a comment's text is only ``[deleted]`` / ``[removed]`` (null stays False)."""
    return pl.col(column).str.strip_chars().is_in(DELETED_BODIES).fill_null(False)


def empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(TABLES[table]))


@dataclass(frozen=True, kw_only=True)
class ScrapedSource:
    """The tables one source contributes; `catalog` holds request-scoped items only."""

    requests: pl.DataFrame
    responses: pl.DataFrame
    mentions: pl.DataFrame
    catalog: pl.DataFrame = field(default_factory=lambda: empty("catalog"))
    counters: dict[str, int] = field(default_factory=dict)
    quarantine: list[str] = field(default_factory=list)  # samples of what was set aside


S = TypeVar("S", bound=SourceSpec)
S_contra = TypeVar("S_contra", bound=SourceSpec, contravariant=True)


class Reader(Protocol[S_contra]):
    def __call__(
        self, source: S_contra, files: Mapping[str, Path], *, dataset: str
    ) -> ScrapedSource: ...


@dataclass(frozen=True, kw_only=True)
class SourceFormat(Generic[S]):
    """A source format as its reader module declares it: the spec model (its `format` Literal
    names the format(s), `roles` the files read, its other fields the options) and the reader,
    given the spec and the verified path of each role."""

    spec: type[S]
    read: Reader[S]

    @property
    def names(self) -> tuple[str, ...]:
        return format_names(self.spec)

    @property
    def module(self) -> str:
        """The reader's module, which the scrape stage's code digest covers."""
        return self.read.__module__


def requests_table(frame: pl.DataFrame, *, dataset: str, source: str, split: str) -> pl.DataFrame:
    """The `requests` table from (request_id, prompt[, seen_titles]) rows of one source."""
    seen = (
        pl.col("seen_titles")
        if "seen_titles" in frame.columns
        else pl.lit([], dtype=pl.List(pl.String)).alias("seen_titles")
    )
    return frame.select(
        pl.lit(dataset).alias("dataset"),
        "request_id",
        pl.lit(split).alias("split"),
        pl.lit(source).alias("source"),
        "prompt",
        seen,
    )


def responses_table(
    frame: pl.DataFrame,
    *,
    dataset: str,
    text: pl.Expr,
    responder_id: pl.Expr | None = None,
    flag: pl.Expr | None = None,
    comment_ids: pl.Expr | None = None,
    comment_starts: pl.Expr | None = None,
    created_utc: pl.Expr | None = None,
) -> pl.DataFrame:
    """The `responses` table from (request_id, response_id, responder_index) rows.

    `responder_id` defaults to the response id (sources without author ids); `flag` is the
    `responder_flag` (null when every responder is a known author). A response that merges no
    comments is its own single comment, starting at 0.
    """
    return frame.select(
        pl.lit(dataset).alias("dataset"),
        "request_id",
        "response_id",
        "responder_index",
        (pl.col("response_id") if responder_id is None else responder_id).alias("responder_id"),
        text.alias("text"),
        (pl.lit(None, dtype=pl.String) if flag is None else flag).alias("responder_flag"),
        (pl.concat_list("response_id") if comment_ids is None else comment_ids).alias(
            "comment_ids"
        ),
        (
            pl.concat_list(pl.lit(0, dtype=pl.Int64)) if comment_starts is None else comment_starts
        ).alias("comment_starts"),
        (pl.lit(None, dtype=pl.Int64) if created_utc is None else created_utc).alias("created_utc"),
    )


def mentions_table(
    frame: pl.DataFrame,
    *,
    dataset: str,
    mention_id: pl.Expr,
    kind: pl.Expr,
    surface: pl.Expr,
    role: pl.Expr | None = None,
    year: pl.Expr | None = None,
    creator: pl.Expr | None = None,
) -> pl.DataFrame:
    """The `mentions` table for mentions a source gives itself (extractor ``source``).

    `role` defaults to ``response``; a ``seen`` mention (a title the request names) has the
    stance ``referenced``, a response's the stance ``recommended``; the comment is the response
    itself, with no span. A frame without
    response_id / responder_index holds seen mentions only: they belong to no responder.
    """
    role = pl.lit("response") if role is None else role
    return frame.select(
        pl.lit(dataset).alias("dataset"),
        "request_id",
        *(
            pl.col(name) if name in frame.columns else pl.lit(None, dtype=dtype).alias(name)
            for name, dtype in (("response_id", pl.String), ("responder_index", pl.Int64))
        ),
        mention_id.alias("mention_id"),
        role.alias("role"),
        kind.alias("kind"),
        surface.alias("surface"),
        (pl.lit(None, dtype=pl.Int64) if year is None else year).alias("year"),
        (pl.lit(None, dtype=pl.String) if creator is None else creator).alias("creator"),
        pl.when(role == "seen")
        .then(pl.lit("referenced"))
        .otherwise(pl.lit("recommended"))
        .alias("stance"),
        (
            pl.col("response_id")
            if "response_id" in frame.columns
            else pl.lit(None, dtype=pl.String)
        ).alias("comment_id"),
        pl.lit(None, dtype=pl.Int64).alias("span_start"),
        pl.lit(None, dtype=pl.Int64).alias("span_end"),
        pl.lit("source").alias("extractor"),
    )


T = TypeVar("T")


def read_jsonl(path: Path, parse: Callable[[Any], T], *, what: str) -> Iterator[T]:
    """`parse` of every record of a JSONL file (blank lines skipped). Malformed JSON, or a
    record `parse` cannot read (a missing key, a wrong type), is a `RemarkError` naming the
    file and line."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RemarkError(f"{path}:{number}: malformed JSON ({exc.msg})") from exc
            try:
                yield parse(record)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise RemarkError(f"{path}:{number}: not {what} ({exc})") from exc
