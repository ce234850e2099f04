"""Same-title items told apart: two films called "Psycho", three called "Gladiator".

A mention that matches several catalog items is resolved by the first rule that leaves one:
1. `release_date` — an item released after the comment was written cannot be meant;
2. `thread` — another mention in the same request named one of them unambiguously;
3. `prior` — across the dataset, unambiguous mentions of one candidate outnumber every other
   candidate's at least `prior_ratio` to 1 (and number at least `min_prior`): a prior learnt
   from the data, not from the catalog;
4. `catalogs` — at least `listing_margin` more of the source catalogs merged into the catalog
   list one candidate than any other (`listed_by`): the "Gladiator" that Reddit-Movie,
   Rank-GRPO's Reddit-v2 and MovieLens all list, not the 1938 or 1992 one only IMDb's
   Reddit-Movie ids know. Catalogs of one source (every `listed_by` empty) never decide.
Otherwise the mention stays ambiguous, with its candidates in the reason.
"""

from __future__ import annotations

import polars as pl

RULES = ("release_date", "thread", "prior", "catalogs")


def disambiguate(
    ambiguous: pl.DataFrame,
    resolved: pl.DataFrame,
    item_years: pl.DataFrame,
    *,
    min_prior: int = 2,
    prior_ratio: float = 2.0,
    listing_margin: int = 2,
) -> pl.DataFrame:
    """`ambiguous`: mention_id, request_id, candidates (list of item ids), latest_year (the
    comment's year, nullable). `resolved`: request_id, item_id of unambiguous mentions.
    `item_years`: item_id, year, listed_by. Returns mention_id, item_id, resolution, reason for
    the mentions a rule resolved.

    >>> ambiguous = pl.DataFrame({"mention_id": ["m1", "m2", "m3"], "request_id": "r",
    ...     "candidates": [["a", "b"], ["c", "d"], ["e", "f"]], "latest_year": 2010})
    >>> years = pl.DataFrame({"item_id": ["a", "b", "c", "d", "e", "f"],
    ...     "year": [1990, 2015, 1960, 1998, 1938, 2000], "listed_by": [[]] * 5 + [["a", "b", "c"]]})
    >>> resolved = pl.DataFrame({"request_id": ["x", "y"], "item_id": ["c", "c"]})
    >>> disambiguate(ambiguous, resolved, years).sort("mention_id").rows()
    [('m1', 'a', 'release_date', 'b released after the comment'), ('m2', 'c', 'prior', 'unambiguous mentions: c 2, d 0'), ('m3', 'f', 'catalogs', 'source catalogs listing: f 3, e 0')]
    """  # noqa: E501
    candidates = (
        ambiguous.select("mention_id", "request_id", "latest_year", item_id="candidates")
        .explode("item_id")
        .join(
            item_years.select("item_id", "year", listed_in=pl.col("listed_by").list.len()).unique(
                "item_id"
            ),
            on="item_id",
            how="left",
        )
    )
    by_date, rest = _by_release_date(candidates)
    by_thread, rest = _by_thread(rest, resolved)
    by_prior, rest = _by_prior(rest, resolved, min_prior=min_prior, prior_ratio=prior_ratio)
    by_listing = _by_listing(rest, listing_margin=listing_margin)
    return pl.concat([by_date, by_thread, by_prior, by_listing])


def _decision(frame: pl.DataFrame, resolution: str, reason: pl.Expr) -> pl.DataFrame:
    return frame.select("mention_id", "item_id", resolution=pl.lit(resolution), reason=reason)


def _by_release_date(candidates: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rule 1: an item released after the comment is out. Returns (decided, candidates left)."""
    possible = candidates.filter(
        pl.col("latest_year").is_null() | pl.col("year").is_null()
        | (pl.col("year") <= pl.col("latest_year"))
    )  # fmt: skip
    dropped = candidates.join(possible, on=["mention_id", "item_id"], how="anti")
    single = _single(possible).join(
        dropped.group_by("mention_id").agg(pl.col("item_id").sort().str.join(", ").alias("late")),
        on="mention_id",
    )
    decided = _decision(single, "release_date", pl.format("{} released after the comment", "late"))
    return decided, possible.join(single, on="mention_id", how="anti")


def _by_thread(
    candidates: pl.DataFrame, resolved: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rule 2: one candidate named unambiguously elsewhere in the thread."""
    in_thread = candidates.join(resolved.unique(), on=["request_id", "item_id"], how="semi")
    single = _single(in_thread)
    decided = _decision(single, "thread", pl.lit("named unambiguously elsewhere in the thread"))
    return decided, candidates.join(single, on="mention_id", how="anti")


def _by_prior(
    candidates: pl.DataFrame, resolved: pl.DataFrame, *, min_prior: int, prior_ratio: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rule 3: the data's prior, counts of unambiguous mentions across the dataset."""
    counts = resolved.group_by("item_id").agg(pl.len().alias("prior"))
    ranked = _ranked(
        candidates.join(counts, on="item_id", how="left").with_columns(
            pl.col("prior").fill_null(0)
        ),
        "prior",
    )
    clear = ranked.filter(
        (pl.col("best") >= min_prior) & (pl.col("best") >= prior_ratio * pl.col("second"))
    )
    decided = _decision(clear, "prior", pl.format("unambiguous mentions: {}", "counts"))
    return decided, candidates.join(clear, on="mention_id", how="anti")


def _by_listing(candidates: pl.DataFrame, *, listing_margin: int) -> pl.DataFrame:
    """Rule 4: one candidate listed by `listing_margin` more source catalogs than any other."""
    ranked = _ranked(candidates.with_columns(pl.col("listed_in").fill_null(0)), "listed_in")
    clear = ranked.filter(pl.col("best") - pl.col("second") >= listing_margin)
    return _decision(clear, "catalogs", pl.format("source catalogs listing: {}", "counts"))


def _ranked(candidates: pl.DataFrame, score: str) -> pl.DataFrame:
    """Per mention: the candidate with the highest `score` (ties: the smallest id), its score
    (`best`), the next one's (`second`, 0 if none) and every "id score" (`counts`)."""
    return (
        candidates.sort(["mention_id", score, "item_id"], descending=[False, True, False])
        .group_by("mention_id", maintain_order=True)
        .agg(
            pl.col("item_id").first(),
            pl.col(score).first().alias("best"),
            pl.col(score).slice(1).max().fill_null(0).alias("second"),
            pl.format("{} {}", "item_id", score).str.join(", ").alias("counts"),
        )
    )


def _single(candidates: pl.DataFrame) -> pl.DataFrame:
    """mention_id, item_id for mentions with exactly one candidate left."""
    return (
        candidates.group_by("mention_id")
        .agg(pl.col("item_id").unique())
        .filter(pl.col("item_id").list.len() == 1)
        .select("mention_id", pl.col("item_id").list.first())
    )
