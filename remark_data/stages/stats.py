"""Stage 5, stats: how much responder noise a labelled dataset carries (DESIGN.md definitions).

Pure functions over the `labels` frame, no I/O; `STAGE` at the end binds them to a run.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import polars as pl

from remark_data.runner.stage import Stage, StageOutput

if TYPE_CHECKING:
    from remark_data.runner.context import StageContext

ALL_SPLITS = "all"


def binary_reward_std(hits: int, group_size: int) -> float:
    """Unbiased std of G binary rewards with `hits` ones (as TRL computes it)."""
    return math.sqrt(hits * (group_size - hits) / (group_size * (group_size - 1)))


def prop2_bound(group_size: int) -> float:
    """Proposition 2: max_m std / min_m std over hit counts m = 1..G-1 for binary rewards.

    >>> round(prop2_bound(8), 3)
    1.512
    """
    stds = [binary_reward_std(m, group_size) for m in range(1, group_size)]
    return max(stds) / min(stds)


def _split_stats(labels: pl.DataFrame, group_size: int) -> pl.DataFrame:
    counts = labels.select(
        "dataset", "split", pl.col("items").list.eval(pl.element().struct.field("count")).alias("c")
    )
    per_split = labels.group_by("dataset", "split").agg(
        pl.len().alias("n_requests"),
        pl.col("n_responders").sum().alias("n_responders_total"),
        pl.col("n_responders").mean().alias("responders_mean"),
        pl.col("n_responders").median().cast(pl.Float64).alias("responders_median"),
        pl.col("n_responders").max().alias("responders_max"),
        (pl.col("n_responders") == 1).mean().alias("single_responder_share"),
    )
    items = (
        counts.explode("c")
        .drop_nulls("c")
        .group_by("dataset", "split")
        .agg(
            pl.col("c").sum().alias("n_mentions"),
            pl.len().alias("n_union_items"),
            (pl.col("c") == 1).mean().alias("single_mention_share"),
        )
    )
    hist = (
        labels.group_by("dataset", "split", "n_responders")
        .agg(pl.len().alias("n_requests"))
        .sort("n_responders")
        .group_by("dataset", "split")
        .agg(pl.struct("n_responders", "n_requests").alias("responders_hist"))
    )
    return (
        per_split.join(items, on=["dataset", "split"], how="left")
        .join(hist, on=["dataset", "split"], how="left")
        .with_columns(
            pl.col("n_mentions").fill_null(0),
            pl.col("n_union_items").fill_null(0),
            (pl.col("n_union_items") / pl.col("n_mentions")).alias("union_to_sum"),
            pl.lit(group_size).alias("group_size"),
            pl.lit(prop2_bound(group_size)).alias("prop2_bound"),
        )
        .rename({"n_responders_total": "n_responders"})
    )


def label_stats(labels: pl.DataFrame, *, group_size: int = 8) -> pl.DataFrame:
    """The `stats` table: one row per (dataset, split), plus a pooled `all` row per dataset.

    Examples
    --------
    >>> import polars as pl
    >>> item = lambda c: {"item_id": "i", "title": "t", "year": None, "creator": None,
    ...     "count": c, "p_hat": 0.5}
    >>> labels = pl.DataFrame({"dataset": ["d", "d"], "split": ["train", "train"],
    ...     "n_responders": [1, 3], "items": [[item(1)], [item(2), item(1)]]})
    >>> label_stats(labels).filter(split="train")["union_to_sum"].item()
    0.75
    """
    pooled = labels.with_columns(pl.lit(ALL_SPLITS).alias("split"))
    frames = [_split_stats(labels, group_size)]
    if labels["split"].n_unique() > 1:
        frames.append(_split_stats(pooled, group_size))
    return pl.concat(frames, how="vertical_relaxed").sort("dataset", "split")


def stats(context: StageContext) -> StageOutput:
    table = label_stats(context.read("labels"), group_size=context.spec.stats.group_size)
    return StageOutput(
        tables={"stats": table},
        files={"stats.json": json.dumps(table.to_dicts(), indent=2) + "\n"},
    )


STAGE = Stage(
    name="stats",
    reads=("labels",),
    writes=("stats",),
    sections=("stats",),
    compute=stats,
    modules=lambda spec: (__name__,),
)
