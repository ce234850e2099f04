"""Stage 4, aggregate: pool the responders of each request into one ReMaRk label row.

c_i counts distinct responders that mentioned item i (one responder naming a title twice counts
once); p̂_i = c_i / n_x; the union is {i : c_i ≥ 1}. Only `recommended` mentions feed the labels.
"""

from __future__ import annotations

import polars as pl

MATCHED = ("exact", "normalized", "year_tolerance", "fuzzy")


def build_labels(
    *,
    requests: pl.DataFrame,
    responses: pl.DataFrame,
    mentions: pl.DataFrame,
    groundings: pl.DataFrame,
    catalog: pl.DataFrame,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The `labels` table (one row per request with ≥ 1 responder) and counters."""
    grounded = mentions.join(
        groundings.filter(pl.col("status").is_in(MATCHED)).select("mention_id", "item_id"),
        on="mention_id",
    )
    responder_items = (
        grounded.filter((pl.col("role") == "response") & (pl.col("stance") == "recommended"))
        .select("request_id", "response_id", "item_id")
        .unique()
    )
    n_responders = responses.group_by("request_id").agg(pl.len().alias("n_responders"))
    items = (
        responder_items.group_by("request_id", "item_id")
        .agg(pl.len().alias("count"))
        .join(n_responders, on="request_id")
        .with_columns((pl.col("count") / pl.col("n_responders")).alias("p_hat"))
        .join(
            catalog.select("item_id", "title", "year", "creator").unique("item_id"),
            on="item_id",
            how="left",
        )
        .with_columns(
            pl.struct("item_id", "title", "year", "creator", "count", "p_hat").alias("item"),
            pl.concat_list(pl.col("title"), pl.col("year").cast(pl.String).fill_null("")).alias(
                "title_year"
            ),
        )
        .sort(["request_id", "count", "title", "item_id"], descending=[False, True, False, False])
        .group_by("request_id", maintain_order=True)
        .agg(
            pl.col("item").alias("items"),
            pl.col("item_id").alias("union_item_ids"),
            pl.col("title_year").alias("groundtruth_with_release_year"),
        )
    )
    # Responders in source order, each with its (possibly empty) item list, item ids sorted.
    per_responder = (
        responses.select("request_id", "response_id")
        .with_row_index("order")
        .join(
            responder_items.group_by("response_id").agg(pl.col("item_id").sort().alias("ids")),
            on="response_id",
            how="left",
        )
        .sort("order")
        .group_by("request_id", maintain_order=True)
        .agg(
            pl.col("ids")
            .fill_null(pl.lit([], dtype=pl.List(pl.String)))
            .alias("responder_item_ids")
        )
    )
    seen = (
        grounded.filter(pl.col("role") == "seen")
        .group_by("request_id")
        .agg(pl.col("item_id").unique().sort().alias("seen_item_ids"))
    )
    empty_ids = pl.lit([], dtype=pl.List(pl.String))
    labels = (
        requests.join(n_responders, on="request_id", how="inner")
        .join(items, on="request_id", how="left")
        .join(per_responder, on="request_id", how="left")
        .join(seen, on="request_id", how="left")
        .with_columns(
            pl.col("union_item_ids").fill_null(empty_ids),
            pl.col("seen_item_ids").fill_null(empty_ids),
            pl.col("groundtruth_with_release_year").fill_null(
                pl.lit([], dtype=pl.List(pl.List(pl.String)))
            ),
            pl.col("items").fill_null(
                pl.lit([], dtype=pl.List(items.schema["items"].inner))  # type: ignore[union-attr]
            ),
        )
        .sort("split", "request_id")
    )
    counters = {
        "requests_without_responders": requests.height - labels.height,
        "requests_with_empty_union": labels.filter(pl.col("union_item_ids").list.len() == 0).height,
    }
    return labels, counters
