"""Near-duplicate catalog items folded into one: the same work listed twice by merged sources
("Se7en" 1995 and "Se7en." 1995), a year apart ("Blue Ruin" 2013 and 2014), or under a name
variant ("Arcade Fire" and "The Arcade Fire" on Last.fm).

Items merge when they share kind and normalised title, their years are within `year_window` of each
other (or both unknown), and their ids and creators are compatible: at most one IMDb id (two IMDb
ids are two films, however alike), at most one creator, and, when the years differ, ids from more
than one source (one source listing "Love" 2015 and "Love" 2016 means two works; two sources
disagreeing by a year about one title usually mean one). The kept item is the first in catalog
order with an IMDb id preferred; it takes the others' names as aliases and lists their ids (and ids
merged into them at load) in `merged_ids`, so every merge is visible in the catalog table.
"""

from __future__ import annotations

import polars as pl

from remark_data.frames import with_normalized_key

# Columns a folded item combines from its rows (or groups by) instead of taking the first row's.
_COMBINED = ("aliases", "merged_ids", "kind", "listed_by")


def _clusters(rows: pl.DataFrame, *, year_window: int) -> pl.DataFrame:
    """A `cluster` number within each (kind, key): years chained within the window, unknown
    years together."""
    return rows.sort("kind", "key", "year", "order", nulls_last=True).with_columns(
        (
            (pl.col("year").diff().abs() > year_window).fill_null(False)
            | (pl.col("year").is_null() != pl.col("year").shift().is_null()).fill_null(False)
        )
        .cum_sum()
        .over("kind", "key")
        .alias("cluster")
    )


def merge_near_duplicates(catalog: pl.DataFrame, *, year_window: int = 1) -> pl.DataFrame:
    """The catalog with each group of near-duplicates folded into one item.

    >>> catalog = pl.DataFrame({"dataset": "d", "item_id": ["imdb:tt1", "mv:se7en:1996",
    ...     "imdb:tt2", "imdb:tt3", "rg:love:2015", "rg:love:2016"],
    ...     "title": ["Se7en", "Se7en.", "Heat", "Heat", "Love", "Love"],
    ...     "year": [1995, 1996, 1986, 1995, 2015, 2016], "creator": None, "aliases": [[]] * 6,
    ...     "kind": "movie", "scope": None, "merged_ids": [[]] * 6, "listed_by": [[]] * 6},
    ...     schema_overrides={"creator": pl.String, "scope": pl.String} | dict.fromkeys(
    ...     ["aliases", "merged_ids", "listed_by"], pl.List(pl.String)))
    >>> merge_near_duplicates(catalog).select("item_id", "aliases", "merged_ids").rows()
    [('imdb:tt1', ['Se7en.'], ['mv:se7en:1996']), ('imdb:tt2', [], []), ('imdb:tt3', [], []), ('rg:love:2015', [], []), ('rg:love:2016', [], [])]
    """  # noqa: E501
    columns = catalog.columns
    rows = with_normalized_key(catalog.with_row_index("order"), "title").with_columns(
        pl.col("item_id").str.starts_with("imdb:").alias("imdb"),
        pl.col("creator").str.to_lowercase().str.strip_chars().alias("creator_key"),
        pl.col("item_id").str.extract(r"^([^:]*):", 1).alias("source"),
    )
    rows = _clusters(rows, year_window=year_window)
    group = ["kind", "key", "cluster"]
    compatible = (
        (pl.len().over(group) > 1)
        & pl.col("scope").is_null().all().over(group)
        & (pl.col("imdb").sum().over(group) <= 1)
        & (pl.col("creator_key").drop_nulls().n_unique().over(group) <= 1)
        & (
            (pl.col("year").drop_nulls().n_unique().over(group) <= 1)
            | (pl.col("source").n_unique().over(group) > 1)
        )
    )
    rows = rows.with_columns(compatible.alias("merge"))
    alone = rows.filter(~pl.col("merge"))
    folded = (
        rows.filter(pl.col("merge"))
        .sort([*group, "imdb", "order"], descending=[False, False, False, True, False])
        .group_by(group, maintain_order=True)
        .agg(
            *(pl.col(c).first() for c in columns if c not in _COMBINED),
            pl.col("listed_by").explode().drop_nulls().unique().sort(),
            pl.col("order").first(),
            pl.concat_list("title", "aliases")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique(maintain_order=True)
            .alias("names"),
            pl.concat_list("item_id", "merged_ids")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique(maintain_order=True)
            .alias("merged_ids"),
        )
        .with_columns(
            pl.col("names").list.set_difference(pl.concat_list("title")).alias("aliases"),
            pl.col("merged_ids").list.set_difference(pl.concat_list("item_id")),
        )
    )
    return (
        pl.concat([alone.select(*columns, "order"), folded.select(*columns, "order")])
        .sort("order")
        .drop("order")
    )
