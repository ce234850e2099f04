"""Per-rank rewards, shapes, group advantages and ranking metrics (DESIGN.md "Definitions").

Everything here works on grounded lists: a list is a sequence of item ids, `None` where a rank
did not ground to a catalog item. Pure Python, no I/O.

Examples
--------
>>> labels = RequestLabels.from_sets([{"a"}, {"a", "b"}])
>>> rank_rewards(["a", "b", "a", None], labels, reward="union")
[1.0, 1.0, 0.0, 0.0]
>>> rank_rewards(["a", "b"], labels, reward="marginal")
[1.0, 0.5]
>>> rank_rewards(["a", "b"], labels, reward="responder", responder=0)
[1.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

RewardKind = Literal["responder", "union", "marginal"]
Shape = Literal["exp_inf", "log_decay"]
REWARD_KINDS: tuple[str, ...] = get_args(RewardKind)
SHAPES: tuple[str, ...] = get_args(Shape)
STD_EPSILON = 1e-4  # as TRL: (r - mean) / (std + 1e-4)


@dataclass(frozen=True, slots=True)
class RequestLabels:
    """The labels of one request x that rewards need.

    `responders` holds S_j per responder, `p_hat` maps union items to c_i / n_x.
    """

    union: frozenset[str]
    p_hat: Mapping[str, float]
    responders: tuple[frozenset[str], ...]
    seen: frozenset[str] = frozenset()

    @classmethod
    def from_sets(
        cls, responders: Iterable[Iterable[str]], *, seen: Iterable[str] = ()
    ) -> RequestLabels:
        """Labels from the responders' item sets; c_i and p̂ are derived."""
        sets = tuple(frozenset(s) for s in responders)
        counts: dict[str, int] = {}
        for items in sets:
            for item in items:
                counts[item] = counts.get(item, 0) + 1
        n = len(sets)
        return cls(
            union=frozenset(counts),
            p_hat={item: c / n for item, c in counts.items()},
            responders=sets,
            seen=frozenset(seen),
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RequestLabels:
        """From a `labels` row (or the label columns a trainer passes along)."""
        labels = cls.from_sets(row["responder_item_ids"], seen=row.get("seen_item_ids") or ())
        items = row.get("items")
        if items:  # prefer the stored p̂ (identical by construction, cheaper to trust)
            p_hat = {i["item_id"]: float(i["p_hat"]) for i in items}
            return cls(labels.union, p_hat, labels.responders, labels.seen)
        return labels

    @property
    def n_responders(self) -> int:
        return len(self.responders)


def check_reward(reward: object, shape: object) -> None:
    """ValueError naming the choices when `reward` or `shape` is not one of the definitions'
    (so a factory fails when built, not at its first call inside a trainer)."""
    if reward not in REWARD_KINDS:
        raise ValueError(f"unknown reward {reward!r} (one of {', '.join(REWARD_KINDS)})")
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r} (one of {', '.join(SHAPES)})")


def eligibility(item_ids: Sequence[str | None], *, seen: Iterable[str] = ()) -> list[int]:
    """e_k = 1 iff L_k grounded, is not seen, and does not repeat an earlier item of L.

    >>> eligibility(["a", None, "a", "s", "b"], seen={"s"})
    [1, 0, 0, 0, 1]
    """
    seen_items = set(seen)
    earlier: set[str] = set()
    flags = []
    for item in item_ids:
        ok = item is not None and item not in seen_items and item not in earlier
        flags.append(int(ok))
        if item is not None:
            earlier.add(item)
    return flags


def apply_shape(rewards: Sequence[float], shape: Shape) -> list[float]:
    """`exp_inf`: r_k itself; `log_decay`: DCG@k:N = Σ_{m=k..N} r_m / log2(m+1).

    >>> [round(x, 4) for x in apply_shape([1.0, 0.0, 1.0], "log_decay")]
    [1.5, 0.5, 0.5]
    """
    if shape == "exp_inf":
        return list(rewards)
    if shape != "log_decay":
        raise ValueError(f"unknown shape {shape!r}")
    out = [0.0] * len(rewards)
    tail = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        tail += rewards[k] / math.log2(k + 2)  # rank m = k + 1
        out[k] = tail
    return out


def rank_rewards(
    item_ids: Sequence[str | None],
    labels: RequestLabels,
    *,
    reward: RewardKind = "union",
    responder: int | None = None,
    shape: Shape = "exp_inf",
) -> list[float]:
    """Per-rank rewards of one grounded list: `responder` (needs `responder` = j), `union`,
    `marginal`; then the shape."""
    flags = eligibility(item_ids, seen=labels.seen)
    if reward == "union":
        raw = [float(e and item in labels.union) for item, e in zip(item_ids, flags, strict=True)]
    elif reward == "marginal":
        raw = [e * labels.p_hat.get(item, 0.0) for item, e in zip(item_ids, flags, strict=True)]  # type: ignore[arg-type]
    elif reward == "responder":
        if responder is None:
            raise ValueError("reward='responder' needs the responder index j")
        chosen = labels.responders[responder]
        raw = [float(e and item in chosen) for item, e in zip(item_ids, flags, strict=True)]
    else:
        raise ValueError(f"unknown reward {reward!r}")
    return apply_shape(raw, shape)


def group_advantages(
    rewards: Sequence[Sequence[float]], *, scaled: bool = True
) -> list[list[float]]:
    """A_{g,k} = (r_{g,k} − mean_g) / (std_g + 1e-4) per rank over the G lists of a group
    (unbiased std, as TRL); `scaled=False` gives r − mean_g.

    >>> [[round(a, 3) for a in row] for row in group_advantages([[1.0], [0.0]])]
    [[0.707], [-0.707]]
    """
    group = len(rewards)
    ranks = len(rewards[0]) if group else 0
    out = [[0.0] * ranks for _ in range(group)]
    for k in range(ranks):
        column = [rewards[g][k] for g in range(group)]
        mean = sum(column) / group
        denominator = 1.0
        if scaled:
            variance = sum((x - mean) ** 2 for x in column) / (group - 1) if group > 1 else 0.0
            denominator = math.sqrt(variance) + STD_EPSILON
        for g in range(group):
            out[g][k] = (column[g] - mean) / denominator
    return out


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
    dcg = sum(h / math.log2(i + 2) for i, h in enumerate(_hits(item_ids, relevant, k)))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal


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
