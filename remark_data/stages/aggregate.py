"""Stage 4, aggregate: pool the responders of each request into one ReMaRk label row.

c_i counts distinct responders that mentioned item i (one responder naming a title twice counts
once); p̂_i = c_i / n_x; the union is {i : c_i ≥ 1}. Only `recommended` mentions feed the labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from remark_data.runner.stage import Stage, StageOutput
from remark_data.schemas import MATCHED_STATUSES

if TYPE_CHECKING:
    from remark_data.runner.context import StageContext


def _responder_slots(responder_items: pl.LazyFrame, n_responders: pl.DataFrame) -> pl.DataFrame:
    """Distinct (request, responder, item) rows, each with its flat responder `slot`, sorted.

    Responder j of the request in row x of `n_responders` has slot ``Σ_{x' < x} n_x' + j``, so a
    sort by (slot, item) orders every responder's items and duplicate mentions become adjacent
    rows: dropping them needs a comparison with the previous row, not a hash table.
    """
    offsets = n_responders.select(
        "request_id",
        (pl.col("n_responders").cum_sum() - pl.col("n_responders")).alias("request_offset"),
    )
    slots = (
        responder_items.join(offsets.lazy(), on="request_id")
        .select(
            "request_id",
            (pl.col("request_offset") + pl.col("responder_index")).alias("slot"),
            "item_id",
        )
        .sort("slot", "item_id")
        .collect(engine="in-memory")
    )
    repeated = (pl.col("slot") == pl.col("slot").shift(1)) & (
        pl.col("item_id") == pl.col("item_id").shift(1)
    )
    return slots.filter(~repeated.fill_null(False))


def _responder_lists(slots: pl.DataFrame, n_responders: pl.DataFrame) -> pl.Series:
    """list[list[item_id]] per row of `n_responders`, cut from the sorted slots by offsets."""
    request_offsets = np.zeros(n_responders.height + 1, dtype=np.int64)
    np.cumsum(n_responders["n_responders"].to_numpy(), out=request_offsets[1:])
    per_slot = np.bincount(slots["slot"].to_numpy(), minlength=int(request_offsets[-1]))
    slot_offsets = np.zeros(len(per_slot) + 1, dtype=np.int64)
    np.cumsum(per_slot, out=slot_offsets[1:])
    items = slots["item_id"].to_arrow(compat_level=pl.CompatLevel.oldest())  # large_string
    inner = pa.LargeListArray.from_arrays(pa.array(slot_offsets), items)
    outer = pa.LargeListArray.from_arrays(pa.array(request_offsets), inner)
    return pl.Series("responder_item_ids", outer).cast(pl.List(pl.List(pl.String)))


def _label_items(
    slots: pl.DataFrame, n_responders: pl.DataFrame, catalog: pl.DataFrame
) -> pl.LazyFrame:
    """Per request: items with c_i and p̂_i (most named first), the union, and Rank-GRPO's
    [title, year] pairs."""
    return (
        slots.lazy()
        .group_by("request_id", "item_id")
        .agg(pl.len().alias("count"))
        .join(n_responders.lazy(), on="request_id")
        .with_columns((pl.col("count") / pl.col("n_responders")).alias("p_hat"))
        .join(
            catalog.lazy()
            .select("item_id", "title", "year", "creator", "aliases")
            .unique("item_id"),
            on="item_id",
            how="left",
        )
        .with_columns(
            pl.struct("item_id", "title", "year", "creator", "aliases", "count", "p_hat").alias(
                "item"
            ),
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


def build_labels(
    *,
    requests: pl.DataFrame,
    responses: pl.DataFrame,
    groundings: pl.DataFrame,
    catalog: pl.DataFrame,
    match_steps: Sequence[str] = ("normalized",),
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The `labels` table (one row per request with ≥ 1 responder) and counters; every row
    carries the `match_steps` a trainer's reward matches generated lines with."""
    grounded = groundings.lazy().filter(pl.col("status").is_in(MATCHED_STATUSES))
    seen_pairs = grounded.filter(pl.col("role") == "seen").select("request_id", "item_id")
    # Only recommended mentions count, and never a title the requester named (a seen item).
    responder_items = (
        grounded.filter((pl.col("role") == "response") & (pl.col("stance") == "recommended"))
        .select("request_id", "responder_index", "item_id")
        .join(seen_pairs, on=["request_id", "item_id"], how="anti")
    )
    n_responders = (
        responses.group_by("request_id")
        .agg(pl.len().alias("n_responders"))
        .join(requests.select("request_id", "split"), on="request_id")
        .sort("split", "request_id")
        .drop("split")
    )
    slots = _responder_slots(responder_items, n_responders)
    items = _label_items(slots, n_responders, catalog)
    seen = (
        grounded.filter(pl.col("role") == "seen")
        .group_by("request_id")
        .agg(pl.col("item_id").unique().sort().alias("seen_item_ids"))
    )
    empty_ids = pl.lit([], dtype=pl.List(pl.String))
    labels = (
        n_responders.with_columns(_responder_lists(slots, n_responders))
        .lazy()
        .join(requests.lazy(), on="request_id", maintain_order="left")
        .join(items, on="request_id", how="left", maintain_order="left")
        .join(seen, on="request_id", how="left", maintain_order="left")
        .with_columns(
            pl.col("union_item_ids").fill_null(empty_ids),
            pl.col("seen_item_ids").fill_null(empty_ids),
            pl.col("groundtruth_with_release_year").fill_null(
                pl.lit([], dtype=pl.List(pl.List(pl.String)))
            ),
        )
        .collect(engine="in-memory")
    )
    labels = labels.with_columns(
        pl.col("items").fill_null(pl.lit([], dtype=labels.schema["items"])),
        pl.lit(list(match_steps), dtype=pl.List(pl.String)).alias("match_steps"),
    )
    by_stance = groundings.filter(pl.col("role") == "response").group_by("stance").len()
    counters = {
        **{f"response_mentions.{stance}": n for stance, n in by_stance.iter_rows()},
        "requests_without_responders": requests.height - labels.height,
        "requests_with_empty_union": labels.filter(pl.col("union_item_ids").list.len() == 0).height,
    }
    return labels, counters


def aggregate(context: StageContext) -> StageOutput:
    labels, counters = build_labels(
        requests=context.read("requests"),
        responses=context.read("responses"),
        groundings=context.read("groundings"),
        catalog=context.read("catalog"),
        match_steps=context.spec.rewards.match_steps,
    )
    return StageOutput(tables={"labels": labels}, counters=dict(counters))


STAGE = Stage(
    name="aggregate",
    reads=("requests", "responses", "groundings", "catalog"),
    writes=("labels",),
    sections=("rewards",),
    compute=aggregate,
    modules=lambda spec: (__name__,),
)
