"""`remark eval` on a grounding gold: each mention of a source that gives its own mentions
(MusiCRS) labelled with the catalog item it means, or why it has none.

    {"dataset": "reddit_music", "request_id": "1uu5cb", "mention_id": "1uu5cb/celp79z#1",
     "kind": "artist", "surface": "Smashing Pumpkins", "item_id": "lastfm:436", "cause": null,
     "alt_item_ids": []}

`cause` is null when `item_id` is set, else `not_in_catalog` (the work exists, the catalog lacks
it) or `not_an_entity` (the source's extractor named something that is no artist or album).
`alt_item_ids` lists duplicate catalog entries of the same work, which count as right.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from remark_data.errors import RemarkError
from remark_data.evaluate.gold import read_lines
from remark_data.evaluate.scoring import score
from remark_data.schemas import MATCHED_STATUSES


class GoldMention(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    dataset: str
    request_id: str
    mention_id: str
    kind: str | None = None
    surface: str
    item_id: str | None
    cause: Literal["not_in_catalog", "not_an_entity"] | None = None
    alt_item_ids: list[str] = []


def read_grounding_gold(path: Path) -> list[GoldMention]:
    """Parse a grounding gold file; a bad line is a `RemarkError` naming file and line."""
    gold = []
    for number, mention in read_lines(path, GoldMention):
        if (mention.item_id is None) == (mention.cause is None):
            raise RemarkError(f"{path}:{number}: give either item_id or cause")
        gold.append(mention)
    return gold


def score_grounding(
    groundings: pl.DataFrame, gold: list[GoldMention], *, draws: int = 1000, seed: int = 0
) -> dict[str, object]:
    """Precision of the matched gold mentions, recall of those the catalog holds, and the gold
    mentions left without an item, by cause (`missed`: the catalog holds it, grounding did not
    find it).

    >>> g = pl.DataFrame({"mention_id": ["a", "b", "c"], "request_id": ["r", "r", "s"],
    ...     "item_id": ["x", None, "z"], "status": ["exact", "unmatched", "fuzzy"]})
    >>> gold = [GoldMention(dataset="d", request_id="r", mention_id="a", surface="X",
    ...                     item_id="x"),
    ...         GoldMention(dataset="d", request_id="r", mention_id="b", surface="Y",
    ...                     item_id="y"),
    ...         GoldMention(dataset="d", request_id="s", mention_id="c", surface="Z",
    ...                     item_id=None, cause="not_in_catalog")]
    >>> row = score_grounding(g, gold, draws=100)
    >>> row["precision"], row["recall"], row["unmatched_missed"], row["unmatched_not_in_catalog"]
    (0.5, 0.5, 1, 0)
    """
    frame = pl.DataFrame(
        [
            (m.request_id, m.mention_id, m.item_id, m.cause, [m.item_id or "", *m.alt_item_ids])
            for m in gold
        ],
        schema=["request_id", "mention_id", "gold_item", "cause", "same"],
        orient="row",
    ).join(groundings.select("mention_id", "item_id", "status"), on="mention_id", how="left")
    matched = frame.filter(pl.col("status").is_in(MATCHED_STATUSES))
    # A duplicate catalog entry of the right work is the right item.
    ours = matched.select(
        "request_id",
        key=pl.when(pl.col("same").list.contains(pl.col("item_id")))
        .then(pl.col("gold_item"))
        .otherwise(pl.col("item_id")),
    )
    wanted = frame.drop_nulls("gold_item").select("request_id", key="gold_item")
    row = score(ours, wanted, level="grounding", by=["request_id"], draws=draws, seed=seed)
    left = frame.filter(~pl.col("status").is_in(MATCHED_STATUSES) | pl.col("status").is_null())
    row["mentions"] = frame.height
    row["unmatched_not_in_catalog"] = left.filter(pl.col("cause") == "not_in_catalog").height
    row["unmatched_not_an_entity"] = left.filter(pl.col("cause") == "not_an_entity").height
    row["unmatched_missed"] = left.filter(pl.col("gold_item").is_not_null()).height
    return row
