"""Stage 1, scrape: bring requests, responders and their (pre-extracted) mentions in.

Every reader returns a `ScrapedSource`; the scrape stage concatenates them over a pipeline's
sources. Readers build answer-level frames and expand them in polars, never row by row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from remark_data.schemas import TABLES, polars_schema

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
