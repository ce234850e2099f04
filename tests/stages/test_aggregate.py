"""`build_labels` against a plain-Python reference, on random tables with every case its integer
codes must get right: a responder naming an item twice or several items, seen items, ids the
catalog lacks, unmatched and non-recommended mentions, requests without responders, title ties."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import polars as pl
import pytest

from remark_data.schemas import MATCHED_STATUSES
from remark_data.stages.aggregate import build_labels
from remark_data.stages.stats import label_stats

COLUMNS = [
    "request_id", "n_responders", "responder_item_ids", "dataset", "split", "source", "prompt",
    "seen_titles", "items", "union_item_ids", "groundtruth_with_release_year", "seen_item_ids",
    "match_steps",
]  # fmt: skip


def _tables(seed: int) -> dict[str, pl.DataFrame]:
    rng = random.Random(seed)
    ids = [f"r{k:02d}" for k in range(30)]
    requests = pl.DataFrame(
        {"dataset": "d", "request_id": ids, "split": [rng.choice(["train", "test"]) for _ in ids],
         "source": "s", "prompt": "p", "seen_titles": [[] for _ in ids]}
    )  # fmt: skip
    # r25..r29 get no responses; "ghost" has responses and mentions but no request row.
    n = {r: rng.randint(1, 6) for r in [*ids[:25], "ghost"]}
    responses = pl.DataFrame(
        [(r, f"{r}/{j}", j) for r, k in n.items() for j in range(k)],
        schema=["request_id", "response_id", "responder_index"], orient="row",
    )  # fmt: skip
    items = [f"i{k:02d}" for k in range(24)]  # i20..i23 are not in the catalog
    catalog = pl.DataFrame(
        {"item_id": items[:20], "title": [rng.choice(["Heat", "Up", "Alien"]) for _ in range(20)],
         "year": [rng.choice([None, 1979, 1995]) for _ in range(20)], "creator": None,
         "aliases": [[] for _ in range(20)]}
    )  # fmt: skip
    rows = []
    for r, k in n.items():
        for _ in range(rng.randint(0, 2)):
            rows.append((r, None, None, "seen", "referenced", rng.choice(items), "exact"))
        for j in range(k):
            for _ in range(rng.randint(0, 4)):
                status = rng.choice([*MATCHED_STATUSES, "unmatched"])
                item = None if status == "unmatched" else rng.choice(items)
                stance = rng.choice(["recommended", "recommended", "referenced", "negative"])
                rows.append((r, f"{r}/{j}", j, "response", stance, item, status))
    groundings = pl.DataFrame(
        rows, orient="row",
        schema={"request_id": pl.String, "response_id": pl.String, "responder_index": pl.Int64,
                "role": pl.String, "stance": pl.String, "item_id": pl.String,
                "status": pl.String},
    ).sample(fraction=1.0, shuffle=True, seed=seed)  # fmt: skip
    return {"requests": requests, "responses": responses, "groundings": groundings,
            "catalog": catalog}  # fmt: skip


def _reference(tables: dict[str, pl.DataFrame]) -> list[dict[str, Any]]:
    matched = [
        g for g in tables["groundings"].iter_rows(named=True) if g["status"] in MATCHED_STATUSES
    ]
    seen = defaultdict(set)
    for g in matched:
        if g["role"] == "seen":
            seen[g["request_id"]].add(g["item_id"])
    named = defaultdict(set)
    for g in matched:
        recommended = g["role"] == "response" and g["stance"] == "recommended"
        if recommended and g["item_id"] not in seen[g["request_id"]]:
            named[g["request_id"], g["responder_index"]].add(g["item_id"])
    n = Counter(tables["responses"]["request_id"])
    split = dict(tables["requests"].select("request_id", "split").iter_rows())
    entry: dict[str, dict] = defaultdict(dict)  # ids the catalog lacks: no title, no year
    entry.update((c["item_id"], c) for c in tables["catalog"].iter_rows(named=True))
    title, year = (lambda i: entry[i].get("title")), (lambda i: entry[i].get("year"))
    labels = []
    for r in sorted((r for r in n if r in split), key=lambda r: (split[r], r)):
        lists = [sorted(named[r, j]) for j in range(n[r])]
        c = Counter(i for items in lists for i in items)
        # polars sorts null titles first; ties fall back to the item id
        union = sorted(c, key=lambda i: (-c[i], title(i) is not None, title(i) or "", i))
        labels.append({
            "request_id": r, "n_responders": n[r], "responder_item_ids": lists,
            "items": [(i, title(i), year(i), c[i], c[i] / n[r]) for i in union],
            "union_item_ids": union, "seen_item_ids": sorted(seen[r]),
            "groundtruth_with_release_year": [
                [title(i), "" if year(i) is None else str(year(i))] for i in union
            ],
        })  # fmt: skip
    return labels


def _fields(labels: pl.DataFrame) -> list[dict[str, Any]]:
    rows = labels.select(
        "request_id", "n_responders", "responder_item_ids", "items", "union_item_ids",
        "seen_item_ids", "groundtruth_with_release_year",
    ).to_dicts()  # fmt: skip
    for row in rows:
        row["items"] = [
            (i["item_id"], i["title"], i["year"], i["count"], i["p_hat"]) for i in row["items"]
        ]
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_labels_match_a_plain_python_reference(seed: int) -> None:
    tables = _tables(seed)
    labels, counters = build_labels(**tables)
    assert labels.columns == COLUMNS
    assert labels.schema["items"].inner.to_schema()["count"] == pl.UInt32  # type: ignore[union-attr]
    assert _fields(labels) == _reference(tables)
    assert counters["requests_without_responders"] == 5
    assert not label_stats(labels).is_empty()


def test_a_hash_collision_is_caught_and_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    tables = _tables(0)
    real = pl.DataFrame.hash_rows

    def colliding(frame: pl.DataFrame, seed: int = 0, *args: Any, **kwargs: Any) -> pl.Series:
        return real(frame, seed, *args, **kwargs) * (seed > 0)  # seed 0: every pair hashes to 0

    monkeypatch.setattr(pl.DataFrame, "hash_rows", colliding)
    assert _fields(build_labels(**tables)[0]) == _reference(tables)
    monkeypatch.setattr(pl.DataFrame, "hash_rows", lambda frame, seed=0: real(frame, 0) * 0)
    with pytest.raises(RuntimeError, match="collided"):
        build_labels(**tables)


def test_a_responder_index_past_the_requests_responses_is_an_error() -> None:
    tables = _tables(1)
    tables["groundings"] = tables["groundings"].with_columns(pl.col("responder_index") + 100)
    with pytest.raises(ValueError, match="responder_index"):
        build_labels(**tables)


def test_a_repeated_request_id_is_an_error() -> None:
    tables = _tables(3)
    tables["requests"] = pl.concat([tables["requests"], tables["requests"].head(1)])
    with pytest.raises(ValueError, match="repeats a request_id"):
        build_labels(**tables)


def test_no_mentions_gives_empty_labels() -> None:
    tables = _tables(2)
    tables["groundings"] = tables["groundings"].clear()
    labels, counters = build_labels(**tables)
    assert labels.columns == COLUMNS
    assert labels["union_item_ids"].list.len().sum() == 0
    assert labels["responder_item_ids"].list.len().to_list() == labels["n_responders"].to_list()
    assert counters["requests_with_empty_union"] == labels.height == 25
