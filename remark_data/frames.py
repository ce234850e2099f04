"""Small polars helpers shared by the stages."""

from __future__ import annotations

import polars as pl

from remark_data.stages.ground.matching import normalize_title


def with_normalized_key(frame: pl.DataFrame, column: str, *, alias: str = "key") -> pl.DataFrame:
    """Add `alias` = normalize_title(`column`), computed once per distinct string."""
    distinct = frame.select(pl.col(column).unique().drop_nulls())
    keys = distinct.with_columns(
        pl.Series(alias, [normalize_title(s) for s in distinct[column]], dtype=pl.String)
    )
    return frame.join(keys, on=column, how="left", nulls_equal=False)
