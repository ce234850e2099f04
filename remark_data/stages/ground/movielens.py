"""MovieLens' movie list, and the IMDb ids that rows from other movie sources join by.

MovieLens writes "Title, The (Alt title) (a.k.a. Other) (1999)"; the other sources (Rank-GRPO's
catalog, Reddit-Movie v1) give a title and year, some without an IMDb id.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from remark_data.frames import with_normalized_key

_ARTICLE_SUFFIX = r"^(?P<rest>.*), (?P<article>The|A|An|La|Le|Les|Il|Das|Der|Die|El|Los|L')$"


def _flip_article(name: pl.Expr) -> pl.Expr:
    """ "Matrix, The" -> "The Matrix"."""
    return (
        pl.when(name.str.contains(_ARTICLE_SUFFIX))
        .then(name.str.replace(_ARTICLE_SUFFIX, "${article} ${rest}"))
        .otherwise(name)
    )


def movielens_titles(movies: Path, links: Path) -> pl.DataFrame:
    """MovieLens "Title, The (Alt title) (1999)" -> title, year, alias, imdb id."""
    frame = pl.read_csv(movies, schema_overrides={"movieId": pl.Int64}).join(
        pl.read_csv(links, schema_overrides={"imdbId": pl.String, "movieId": pl.Int64}),
        on="movieId",
    )
    parsed = frame.with_columns(
        pl.col("title").str.extract(r"\((\d{4})\)\s*$", 1).cast(pl.Int64).alias("year"),
        pl.col("title").str.replace(r"\s*\(\d{4}\)\s*$", "").str.strip_chars().alias("bare"),
        pl.format("tt{}", pl.col("imdbId").str.zfill(7)).alias("imdb"),
    ).with_columns(
        # Every trailing "(…)" is another name: "Léon: The Professional (a.k.a. The
        # Professional) (Léon)"; "a.k.a." is MovieLens' marker, not part of the name.
        pl.col("bare").str.extract(r"^(.*?)((?:\s+\([^()]*\))+)$", 1).alias("main"),
        pl.col("bare")
        .str.extract(r"^(.*?)((?:\s+\([^()]*\))+)$", 2)
        .str.extract_all(r"\([^()]*\)")
        .list.eval(pl.element().str.strip_chars("() ").str.replace(r"(?i)^a\.k\.a\.?\s*", ""))
        .alias("alt"),
    )

    return parsed.with_columns(pl.coalesce("main", "bare").alias("title"), pl.col("alt")).select(
        _flip_article(pl.col("title")).alias("title"),
        "year",
        "imdb",
        pl.col("alt")
        .list.eval(_flip_article(pl.element()))
        .fill_null(pl.lit([], dtype=pl.List(pl.String)))
        .alias("aliases"),
        pl.lit(0).alias("priority"),
    )


def join_imdb_ids(rows: pl.DataFrame) -> pl.DataFrame:
    """Rows (key, year, imdb, aliases) with `imdb` filled where another row of the same film
    has one, `joined_imdb`: whether it was filled so, and `joined_one_of`: whether by a title
    that several IMDb films of that year share (the first is taken).

    A row without an IMDb id joins the IMDb group of the same key and year, when there is one:
    by title, else by an alias that names one IMDb film ("Sunset Boulevard", 1950, is
    MovieLens' "Sunset Blvd.").
    """
    with_imdb = rows.filter(pl.col("imdb").is_not_null())
    by_title = with_imdb.group_by("key", "year").agg(
        pl.col("imdb").first().alias("known_imdb"), (pl.col("imdb").n_unique() > 1).alias("several")
    )
    by_alias = (
        with_normalized_key(
            with_imdb.select("year", "imdb", alias="aliases").explode("alias").drop_nulls(),
            "alias",
        )
        .group_by("key", "year")
        .agg(pl.col("imdb").unique().alias("known_imdb"))
        .filter(pl.col("known_imdb").list.len() == 1)
        .with_columns(pl.col("known_imdb").list.first(), several=pl.lit(False))
        .join(by_title, on=["key", "year"], how="anti")
    )
    return (
        rows.join(pl.concat([by_title, by_alias]), on=["key", "year"], how="left")
        .with_columns(
            pl.coalesce("imdb", "known_imdb").alias("imdb"),
            (pl.col("imdb").is_null() & pl.col("known_imdb").is_not_null()).alias("joined_imdb"),
        )
        .with_columns((pl.col("joined_imdb") & pl.col("several")).alias("joined_one_of"))
        .drop("known_imdb", "several")
    )
