"""Rank-GRPO: its own columns, with the union in `groundtruth_with_release_year`, so its trainer
runs unchanged on ReMaRk labels (one row per request instead of one per responder)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remark_data.adapters.payload import conversational_prompt

if TYPE_CHECKING:
    import datasets
    import polars as pl


def to_rank_grpo_dataset(labels: pl.DataFrame) -> datasets.Dataset:
    import datasets
    import polars as pl

    frame = labels.select(
        conversational_prompt(),
        "seen_titles",
        "groundtruth_with_release_year",
        pl.col("union_item_ids").list.len().alias("num_groundtruth"),
        pl.col("request_id").alias("sample_id"),
        "n_responders",
    )
    return datasets.Dataset(frame.to_arrow())
