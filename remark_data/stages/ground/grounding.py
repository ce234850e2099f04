"""Stage 3, ground: mentions -> catalog items, columnar over all mentions at once.

Key types are tried in the spec's order (`exact` raw text, then `normalized` title); a key hit
is accepted when the years agree within the tolerance, the nearest year winning. Items scoped to
a request (ProtoQA clusters) only match mentions of that request. Unmatched and ambiguous
mentions are kept, with a reason, never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from remark_data.frames import with_normalized_key

_CARRIED = (
    "dataset",
    "request_id",
    "response_id",
    "responder_index",
    "mention_id",
    "role",
    "stance",
)
_GROUNDING_COLUMNS = (
    *_CARRIED, "item_id", "status", "score", "reason", "candidates", "resolution"
)  # fmt: skip


def catalog_keys(catalog: pl.DataFrame) -> pl.DataFrame:
    """One row per (item, name) with its exact and normalised key."""
    names = (
        catalog.select(
            "item_id",
            "scope",
            pl.col("year").alias("item_year"),
            pl.col("kind").alias("item_kind"),
            pl.col("creator").alias("item_creator"),
            pl.concat_list(pl.col("title"), pl.col("aliases")).alias("name"),
        )
        .explode("name")
        .unique(["item_id", "name"])
    )
    return with_normalized_key(names, "name", alias="normalized").rename({"name": "exact"})


def _same_kind() -> pl.Expr:
    return (
        pl.col("kind").is_null()
        | pl.col("item_kind").is_null()
        | (pl.col("kind") == pl.col("item_kind"))
    )


def _candidates(pending: pl.DataFrame, keys: pl.DataFrame, method: str) -> pl.DataFrame:
    key = keys.select(
        "item_id", "scope", "item_year", "item_kind", "item_creator", pl.col(method).alias("key")
    )
    scoped = pending.join(
        key.filter(pl.col("scope").is_not_null()),
        left_on=["request_id", "key"],
        right_on=["scope", "key"],
    )
    unscoped = pending.join(key.filter(pl.col("scope").is_null()).drop("scope"), on="key")
    return (
        pl.concat([scoped, unscoped], how="diagonal_relaxed")
        .filter(_same_kind())
        .with_columns(pl.lit(100.0).alias("score"))
    )


def _fuzzy_candidates(
    pending: pl.DataFrame, keys: pl.DataFrame, *, cutoff: float, creator_cutoff: float
) -> pl.DataFrame:
    """Best-scoring global catalog names per distinct normalised mention key (rapidfuzz cdist
    over all distinct keys at once, in blocks), then the creator check for books and music."""
    import numpy as np
    from rapidfuzz import fuzz, process

    probe = with_normalized_key(pending, "surface").filter(pl.col("key").str.len_chars() >= 3)
    names = keys.filter(pl.col("scope").is_null()).unique(["item_id", "normalized"])
    choices = names["normalized"].to_list()
    queries = probe["key"].unique().to_list()
    if not queries or not choices:
        return pl.DataFrame()
    rows: list[tuple[str, int, float]] = []
    for start in range(0, len(queries), 2_000):
        block = queries[start : start + 2_000]
        scores = process.cdist(
            block, choices, scorer=fuzz.ratio, score_cutoff=cutoff, workers=-1, dtype=np.float32
        )
        best = scores.max(axis=1)
        for i, j in zip(*np.nonzero((scores == best[:, None]) & (best[:, None] > 0)), strict=True):
            rows.append((block[i], int(j), float(best[i])))
    if not rows:
        return pl.DataFrame()
    hits = pl.DataFrame(
        rows, schema={"key": pl.String, "choice": pl.Int64, "score": pl.Float64}, orient="row"
    )
    matched = hits.join(
        names.with_row_index("choice").with_columns(pl.col("choice").cast(pl.Int64)), on="choice"
    )
    candidates = probe.join(
        matched.select("key", "item_id", "item_year", "item_kind", "item_creator", "score"),
        on="key",
    )
    return candidates.filter(_same_kind())


def _creator_agrees(candidates: pl.DataFrame, cutoff: float) -> pl.DataFrame:
    """Drop candidates whose author/artist contradicts the one named with the mention. A
    catalog creator may list several people ("Marcus Aurelius, Martin Hammond"): naming any
    one of them agrees."""
    if candidates.is_empty() or "creator" not in candidates.columns:
        return candidates
    ok = [
        m is None or c is None or creator_agrees(m, c, cutoff=cutoff)
        for m, c in zip(candidates["creator"], candidates["item_creator"], strict=True)
    ]
    return candidates.filter(pl.Series(ok, dtype=pl.Boolean))


def creator_agrees(named: str, listed: str, *, cutoff: float) -> bool:
    """Whether a creator named in text is one of a catalog item's comma-separated creators.

    >>> creator_agrees("Marcus Aurelius", "Marcus Aurelius, Martin Hammond, Diskin Clay",
    ...                cutoff=60)
    True
    >>> creator_agrees("Stephen King", "Peter Straub", cutoff=60)
    False
    """
    from rapidfuzz import fuzz

    named = named.casefold()
    return any(
        fuzz.token_set_ratio(named, person.strip()) >= cutoff
        for person in listed.casefold().split(",")
    )


def ground_mentions(
    mentions: pl.DataFrame,
    catalog: pl.DataFrame,
    *,
    methods: Sequence[str],
    year_tolerance: int,
    fuzzy_cutoff: float = 90.0,
    creator_cutoff: float = 60.0,
) -> pl.DataFrame:
    """The `groundings` table: one row per mention.

    Examples
    --------
    >>> import polars as pl
    >>> catalog = pl.DataFrame({"item_id": ["m1"], "title": ["Arrival"], "year": [2016],
    ...     "creator": [None], "aliases": [[]], "kind": ["movie"], "scope": [None]},
    ...     schema_overrides={"scope": pl.String, "creator": pl.String})
    >>> mentions = pl.DataFrame({"dataset": ["d"], "request_id": ["r"], "response_id": ["x"],
    ...     "responder_index": [0], "mention_id": ["x#0"], "role": ["response"],
    ...     "stance": ["recommended"], "kind": ["movie"], "surface": ["ARRIVAL"], "year": [2017],
    ...     "creator": [None]}, schema_overrides={"creator": pl.String})
    >>> out = ground_mentions(mentions, catalog, methods=["normalized"], year_tolerance=2)
    >>> out["status"].item()
    'year_tolerance'
    """
    keys = catalog_keys(catalog)
    pending = mentions.select(*_CARRIED, "kind", "surface", "year", "creator")
    resolved: list[pl.DataFrame] = []
    nearest_miss: list[pl.DataFrame] = []
    for method in methods:
        if pending.is_empty():
            break
        candidates = _method_candidates(
            pending, keys, method, fuzzy_cutoff=fuzzy_cutoff, creator_cutoff=creator_cutoff
        )
        if candidates.width == 0:  # fuzzy found no name at all
            continue
        candidates = candidates.with_columns(_year_distance())
        best = _best(candidates, year_tolerance=year_tolerance, creator_cutoff=creator_cutoff)
        resolved.append(_decided(pending.join(best, on="mention_id"), method))
        nearest_miss.append(
            candidates.join(best, on="mention_id", how="anti")
            .group_by("mention_id")
            .agg(pl.col("item_year").sort_by("distance").first().alias("nearest_year"))
        )
        pending = pending.join(best, on="mention_id", how="anti")
    unmatched = _unmatched(pending, nearest_miss, year_tolerance=year_tolerance)
    return pl.concat([*resolved, unmatched], how="vertical_relaxed").select(_GROUNDING_COLUMNS)


def _year_distance() -> pl.Expr:
    return (
        pl.when(pl.col("year").is_null() | pl.col("item_year").is_null())
        .then(0)
        .otherwise((pl.col("year") - pl.col("item_year")).abs())
        .alias("distance")
    )


def _best(candidates: pl.DataFrame, *, year_tolerance: int, creator_cutoff: float) -> pl.DataFrame:
    """Per mention, the items with the highest score, then the nearest year (within the
    tolerance and not contradicting the named creator); several left is ambiguous."""
    within = _creator_agrees(
        candidates.filter(pl.col("distance") <= year_tolerance), creator_cutoff
    )
    return (
        within.filter(pl.col("score") == pl.col("score").max().over("mention_id"))
        .filter(pl.col("distance") == pl.col("distance").min().over("mention_id"))
        .group_by("mention_id")
        .agg(
            pl.col("item_id").unique().sort().alias("item_ids"),
            pl.col("distance").first(),
            pl.col("score").first(),
        )
    )


def _method_candidates(
    pending: pl.DataFrame,
    keys: pl.DataFrame,
    method: str,
    *,
    fuzzy_cutoff: float,
    creator_cutoff: float,
) -> pl.DataFrame:
    """(mention, item) candidate pairs that one key method finds, with a score; a frame with no
    columns when fuzzy matching finds no name at all."""
    if method == "fuzzy":
        return _fuzzy_candidates(pending, keys, cutoff=fuzzy_cutoff, creator_cutoff=creator_cutoff)
    probe = (
        pending.with_columns(pl.col("surface").alias("key"))
        if method == "exact"
        else with_normalized_key(pending, "surface")
    )
    return _candidates(probe, keys, method)


def _decided(matched: pl.DataFrame, method: str) -> pl.DataFrame:
    """Grounding rows for mentions whose best candidates are `item_ids`: one item is a match,
    several are ambiguous (listed in the reason)."""
    several = pl.col("item_ids").list.len() > 1
    return matched.select(
        *_base(),
        pl.when(~several).then(pl.col("item_ids").list.first()).alias("item_id"),
        pl.when(several)
        .then(pl.lit("ambiguous"))
        .when(pl.lit(method == "fuzzy"))
        .then(pl.lit("fuzzy"))
        .when(pl.col("distance") > 0)
        .then(pl.lit("year_tolerance"))
        .otherwise(pl.lit(method))
        .alias("status"),
        "score",
        pl.when(several)
        .then(
            pl.format(
                "{} items match: {}",
                pl.col("item_ids").list.len(),
                pl.col("item_ids").list.join(", "),
            )
        )
        .alias("reason"),
        pl.when(several).then(pl.col("item_ids")).alias("candidates"),
        pl.lit(None, dtype=pl.String).alias("resolution"),
    )


def _unmatched(
    pending: pl.DataFrame, nearest_miss: list[pl.DataFrame], *, year_tolerance: int
) -> pl.DataFrame:
    """Grounding rows for mentions no method matched, with the nearest catalog year missed."""
    misses = pl.concat(nearest_miss).unique("mention_id") if nearest_miss else None
    if misses is not None and not misses.is_empty():
        pending = pending.join(misses, on="mention_id", how="left")
    else:
        pending = pending.with_columns(pl.lit(None, dtype=pl.Int64).alias("nearest_year"))
    return pending.select(
        *_base(),
        pl.lit(None, dtype=pl.String).alias("item_id"),
        pl.lit("unmatched").alias("status"),
        pl.lit(0.0).alias("score"),
        pl.when(pl.col("nearest_year").is_not_null())
        .then(
            pl.format(
                "year {} outside ±{} of catalog year {}",
                "year",
                pl.lit(year_tolerance),
                "nearest_year",
            )
        )
        .otherwise(pl.lit("no catalog key"))
        .alias("reason"),
        pl.lit(None, dtype=pl.List(pl.String)).alias("candidates"),
        pl.lit(None, dtype=pl.String).alias("resolution"),
    )


def _base() -> list[pl.Expr]:
    return [pl.col(c) for c in _CARRIED]
