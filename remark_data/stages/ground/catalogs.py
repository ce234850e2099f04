"""Catalog loaders into the `catalog` table, each registered with its format in `CATALOGS`.
Item ids are derived from content, so they are stable across runs:
``<catalog>:<normalised-title-slug>:<year>``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

import polars as pl

from remark_data.errors import RemarkError
from remark_data.frames import with_normalized_key
from remark_data.stages.ground.merge import merge_near_duplicates
from remark_data.stages.ground.movielens import join_imdb_ids, movielens_titles
from remark_data.stages.ground.pickles import load_restricted_pickle
from remark_data.stages.scrape.spec import FileRefs, format_names


def load_rank_grpo_catalog(path: Path, *, dataset: str) -> pl.DataFrame:
    """Rank-GRPO's ``gt_catalog.pkl``: an iterable of (title, year) with int years."""
    raw = load_restricted_pickle(path)
    if not isinstance(raw, list | tuple) or not all(
        isinstance(entry, tuple | list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], int)
        for entry in raw
    ):
        raise RemarkError(f"{path}: expected a list of (title, year) pairs with int years")
    frame = pl.DataFrame(
        {"title": [e[0] for e in raw], "year": [e[1] for e in raw]},
        schema={"title": pl.String, "year": pl.Int64},
    )
    frame = with_normalized_key(frame, "title")
    return (
        frame.with_columns(
            pl.format("rg:{}:{}", pl.col("key").str.replace_all(" ", "-"), "year").alias("item_id")
        )
        # Spellings that share a key and year ("Se7en"/"Se7en.") are one item; the rest are aliases.
        .group_by("item_id", maintain_order=True)
        .agg(
            pl.col("title").first(),
            pl.col("year").first(),
            pl.col("title").slice(1).alias("aliases"),
        )
        .select(
            pl.lit(dataset).alias("dataset"),
            "item_id",
            "title",
            "year",
            pl.lit(None, dtype=pl.String).alias("creator"),
            "aliases",
            pl.lit("movie").alias("kind"),
            pl.lit(None, dtype=pl.String).alias("scope"),
            pl.lit([], dtype=pl.List(pl.String)).alias("merged_ids"),
            pl.lit([], dtype=pl.List(pl.String)).alias("listed_by"),
        )
    )


def _catalog_frame(frame: pl.DataFrame, *, dataset: str, kind: str) -> pl.DataFrame:
    """(item_id, title, year, creator, aliases[, merged_ids, listed_by]) -> the catalog table."""
    return frame.select(
        pl.lit(dataset).alias("dataset"),
        "item_id",
        "title",
        pl.col("year").cast(pl.Int64),
        pl.col("creator").cast(pl.String),
        pl.col("aliases").cast(pl.List(pl.String)),
        pl.lit(kind).alias("kind"),
        pl.lit(None, dtype=pl.String).alias("scope"),
        (
            pl.col("merged_ids").cast(pl.List(pl.String))
            if "merged_ids" in frame.columns
            else pl.lit([], dtype=pl.List(pl.String))
        ).alias("merged_ids"),
        (
            pl.col("listed_by").cast(pl.List(pl.String))
            if "listed_by" in frame.columns
            else pl.lit([], dtype=pl.List(pl.String))
        ).alias("listed_by"),
    )


_SOURCE_NAMES = {0: "movielens", 1: "reddit_movie_v1", 2: "rank_grpo"}  # by merge priority


def load_movie_catalog(files: Mapping[str, Path], *, dataset: str) -> pl.DataFrame:
    """MovieLens + Rank-GRPO + Reddit-Movie v1, deduplicated by IMDb id where known, else by
    normalised title + year. Ids: ``imdb:tt…`` or ``mv:<title-slug>:<year>``."""
    entity = json.loads(files["reddit_movie_v1"].read_text())
    v1 = pl.DataFrame({"raw": list(entity), "imdb": list(entity.values())}).select(
        pl.col("raw").str.replace(r"\s*\(\d{4}\)\s*$", "").alias("title"),
        pl.col("raw").str.extract(r"\((\d{4})\)\s*$", 1).cast(pl.Int64).alias("year"),
        "imdb",
        pl.lit([], dtype=pl.List(pl.String)).alias("aliases"),
        pl.lit(1).alias("priority"),
    )
    rank = load_rank_grpo_catalog(files["rank_grpo"], dataset=dataset).select(
        "title",
        "year",
        pl.lit(None, dtype=pl.String).alias("imdb"),
        "aliases",
        pl.lit(2).alias("priority"),
    )
    movielens = movielens_titles(files["movielens_movies"], files["movielens_links"])
    rows = with_normalized_key(pl.concat([v1, rank, movielens], how="vertical_relaxed"), "title")
    rows = join_imdb_ids(rows)
    slug_id = pl.format("mv:{}:{}", pl.col("key").str.replace_all(" ", "-"), pl.col("year"))
    rows = rows.with_columns(
        pl.when(pl.col("imdb").is_not_null())
        .then(pl.format("imdb:{}", "imdb"))
        .otherwise(slug_id)
        .alias("item_id"),
        # The slug id of a row that found its IMDb film through another row: kept in
        # `merged_ids`, so an id handed out while it stood alone (gold labels, published
        # datasets, catalogs parsed before) still resolves.
        pl.when(pl.col("joined_imdb")).then(slug_id).alias("slug_id"),
        # A row that joined one of several same-title, same-year films lists none of them.
        pl.when(~pl.col("joined_one_of"))
        .then(pl.col("priority").replace_strict(_SOURCE_NAMES, return_dtype=pl.String))
        .alias("listed"),
    )
    merged = (
        rows.sort("priority")
        .group_by("item_id", maintain_order=True)
        .agg(
            pl.col("title").first(),
            pl.col("year").drop_nulls().first(),
            pl.concat_list(pl.col("title"), pl.col("aliases"))
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique(maintain_order=True)
            .alias("names"),
            pl.col("slug_id").drop_nulls().unique(maintain_order=True).alias("merged_ids"),
            # Reddit-Movie v1, Rank-GRPO's Reddit-v2 and MovieLens each list films people name.
            pl.col("listed").drop_nulls().unique().sort().alias("listed_by"),
        )
        .with_columns(
            pl.col("names").list.set_difference(pl.concat_list("title")).alias("aliases"),
            pl.col("merged_ids").list.set_difference(pl.concat_list("item_id")),
        )
        .with_columns(pl.lit(None, dtype=pl.String).alias("creator"))
    )
    return _catalog_frame(merged, dataset=dataset, kind="movie")


def load_goodbooks_catalog(path: Path, *, dataset: str) -> pl.DataFrame:
    """goodbooks-10k: original title (else the title without its series suffix), authors, year."""
    books = pl.read_csv(path, infer_schema_length=None)
    series = r"\s*\([^()]*#[\d.]+\)\s*$"
    frame = books.select(
        pl.format("gb:{}", "goodreads_book_id").alias("item_id"),
        # The English edition title; the original-language title becomes an alias.
        pl.col("title").str.replace(series, "").alias("title"),
        pl.col("original_title").str.strip_chars().alias("display"),
        pl.col("original_publication_year").cast(pl.Int64, strict=False).alias("year"),
        pl.col("authors").alias("creator"),
    ).with_columns(
        pl.when((pl.col("display") != pl.col("title")) & (pl.col("display") != ""))
        .then(pl.concat_list("display"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String)))
        .alias("aliases")
    )
    return _catalog_frame(frame, dataset=dataset, kind="book")


def load_music_catalog(files: Mapping[str, Path], *, dataset: str) -> pl.DataFrame:
    """Last.fm artists and the Rolling Stone 500 albums (a Mac-Roman CSV)."""
    artists = pl.read_csv(
        files["artists"], separator="\t", quote_char=None, infer_schema_length=None
    ).select(
        pl.format("lastfm:{}", "id").alias("item_id"),
        pl.col("name").alias("title"),
        pl.lit(None, dtype=pl.Int64).alias("year"),
        pl.lit(None, dtype=pl.String).alias("creator"),
        pl.lit([], dtype=pl.List(pl.String)).alias("aliases"),
    )
    text = files["albums"].read_bytes().decode("mac_roman")
    albums = pl.read_csv(io.StringIO(text)).select(
        pl.format("rs500:{}", "Number").alias("item_id"),
        pl.col("Album").alias("title"),
        pl.col("Year").cast(pl.Int64).alias("year"),
        pl.col("Artist").alias("creator"),
        pl.lit([], dtype=pl.List(pl.String)).alias("aliases"),
    )
    return pl.concat(
        [
            _catalog_frame(artists, dataset=dataset, kind="artist"),
            _catalog_frame(albums, dataset=dataset, kind="album"),
        ]
    )


class CatalogSpec(FileRefs):
    """The ``[catalog]`` table; each catalog format below subclasses it."""


class NoCatalog(CatalogSpec):
    format: Literal["none"] = "none"


class RankGrpoCatalog(CatalogSpec):
    format: Literal["rank_grpo_pickle"]
    roles: ClassVar[tuple[str, ...]] = ("catalog",)


class MovieCatalog(CatalogSpec):
    format: Literal["movies_merged"]
    roles: ClassVar[tuple[str, ...]] = (
        "movielens_movies",
        "movielens_links",
        "rank_grpo",
        "reddit_movie_v1",
    )


class GoodbooksCatalog(CatalogSpec):
    format: Literal["goodbooks"]
    roles: ClassVar[tuple[str, ...]] = ("books",)


class MusicCatalog(CatalogSpec):
    format: Literal["music"]
    roles: ClassVar[tuple[str, ...]] = ("artists", "albums")


C = TypeVar("C", bound=CatalogSpec, contravariant=True)


class Loader(Protocol[C]):
    def __call__(
        self, catalog: C, files: Mapping[str, Path], *, dataset: str
    ) -> pl.DataFrame | None: ...


@dataclass(frozen=True, kw_only=True)
class CatalogFormat(Generic[C]):
    """A catalog format: its spec model (`format` Literal, file `roles`) and its loader."""

    spec: type[C]
    load: Loader[C]


#: format name -> its record; the pipeline spec's `catalog` union is built from it.
CATALOGS: dict[str, CatalogFormat[Any]] = {
    format_names(record.spec)[0]: record
    for record in (
        CatalogFormat(spec=NoCatalog, load=lambda c, files, *, dataset: None),
        CatalogFormat(
            spec=RankGrpoCatalog,
            load=lambda c, files, *, dataset: load_rank_grpo_catalog(
                files["catalog"], dataset=dataset
            ),
        ),
        CatalogFormat(
            spec=MovieCatalog,
            load=lambda c, files, *, dataset: load_movie_catalog(files, dataset=dataset),
        ),
        CatalogFormat(
            spec=GoodbooksCatalog,
            load=lambda c, files, *, dataset: load_goodbooks_catalog(
                files["books"], dataset=dataset
            ),
        ),
        CatalogFormat(
            spec=MusicCatalog,
            load=lambda c, files, *, dataset: load_music_catalog(files, dataset=dataset),
        ),
    )
}


def load_catalog(
    catalog: CatalogSpec, files: Mapping[str, Path], *, dataset: str
) -> pl.DataFrame | None:
    """The global catalog a spec names, near-duplicates merged, or None (`format = "none"`)."""
    loaded = CATALOGS[catalog.format].load(catalog, files, dataset=dataset)
    return None if loaded is None else merge_near_duplicates(loaded)
