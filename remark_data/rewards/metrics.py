"""Ranking metrics against the union and per responder: Recall@K and NDCG@K (DESIGN.md
"Definitions"). Pure Python, no I/O."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Literal

from remark_data.rewards.core import RequestLabels, dcg


def _hits(item_ids: Sequence[str | None], relevant: frozenset[str] | set[str], k: int) -> list[int]:
    earlier: set[str] = set()
    hits = []
    for item in item_ids[:k]:
        hits.append(int(item is not None and item in relevant and item not in earlier))
        if item is not None:
            earlier.add(item)
    return hits


def recall_at_k(item_ids: Sequence[str | None], relevant: Iterable[str], k: int) -> float | None:
    """|distinct relevant items in the top k| / |relevant|; None when nothing is relevant.

    >>> recall_at_k(["a", "x", "a", "b"], {"a", "b", "c", "d"}, 3)
    0.25
    """
    relevant = frozenset(relevant)
    if not relevant:
        return None
    return sum(_hits(item_ids, relevant, k)) / len(relevant)


def ndcg_at_k(item_ids: Sequence[str | None], relevant: Iterable[str], k: int) -> float | None:
    """Binary NDCG@k (repeats count once); None when nothing is relevant.

    >>> round(ndcg_at_k(["x", "a"], {"a"}, 2), 4)
    0.6309
    """
    relevant = frozenset(relevant)
    if not relevant:
        return None
    return dcg(_hits(item_ids, relevant, k)) / dcg([1] * min(len(relevant), k))


def responder_metric(
    item_ids: Sequence[str | None],
    labels: RequestLabels,
    k: int,
    *,
    metric: Literal["recall", "ndcg"] = "recall",
) -> list[float]:
    """The metric against each responder j with S_j non-empty (Rank-GRPO's per-row protocol)."""
    fn = recall_at_k if metric == "recall" else ndcg_at_k
    return [fn(item_ids, s, k) for s in labels.responders if s]  # type: ignore[misc]


def dataset_metrics(
    lists: Iterable[tuple[Sequence[str | None], RequestLabels]], k: int
) -> dict[str, float]:
    """Recall@k and NDCG@k of many (list, labels) pairs against the union and per responder.

    Per responder, `per_row` averages over every (list, responder j with S_j ≠ ∅) pair, so a
    request weighs as much as its responder count (Rank-GRPO's protocol); `per_request` first
    averages over a request's responders. For ProtoQA the items are answer clusters, so these are
    recall@k over clusters.

    >>> labels = RequestLabels.from_sets([{"a"}, {"b"}, {"b"}])
    >>> m = dataset_metrics([(["b"], labels), (["a"], RequestLabels.from_sets([{"a"}]))], k=1)
    >>> m["recall_union"], m["recall_responder_per_row"], m["recall_responder_per_request"]
    (0.75, 0.75, 0.8333333333333333)
    """
    union_recall, union_ndcg = [], []
    row_recall, row_ndcg, request_recall, request_ndcg = [], [], [], []
    for item_ids, labels in lists:
        recall = recall_at_k(item_ids, labels.union, k)
        if recall is None:
            continue
        union_recall.append(recall)
        union_ndcg.append(ndcg_at_k(item_ids, labels.union, k) or 0.0)
        per_j_recall = responder_metric(item_ids, labels, k, metric="recall")
        per_j_ndcg = responder_metric(item_ids, labels, k, metric="ndcg")
        row_recall += per_j_recall
        row_ndcg += per_j_ndcg
        request_recall.append(sum(per_j_recall) / len(per_j_recall))
        request_ndcg.append(sum(per_j_ndcg) / len(per_j_ndcg))

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    return {
        "recall_union": mean(union_recall),
        "ndcg_union": mean(union_ndcg),
        "recall_responder_per_row": mean(row_recall),
        "ndcg_responder_per_row": mean(row_ndcg),
        "recall_responder_per_request": mean(request_recall),
        "ndcg_responder_per_request": mean(request_ndcg),
    }
