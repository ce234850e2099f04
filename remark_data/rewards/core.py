"""Per-rank rewards, the DCG, shapes and group advantages (DESIGN.md "Definitions").

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


def discounted(per_rank: Sequence[float]) -> list[float]:
    """r_k / log2(k + 1) at each rank k = 1..N: the one DCG discount every DCG here uses.

    >>> [round(x, 4) for x in discounted([1.0, 1.0, 0.0])]
    [1.0, 0.6309, 0.0]
    """
    return [r / math.log2(k + 2) for k, r in enumerate(per_rank)]  # rank k + 1


def dcg(per_rank: Sequence[float]) -> float:
    """DCG@N = Σ_k r_k / log2(k + 1): one scalar per list (scalar rewards, per-prompt statistics).

    >>> round(dcg([1.0, 0.0, 1.0]), 4)
    1.5
    """
    return sum(discounted(per_rank))


def rank_discounts(ranks: int) -> list[float]:
    """1 / log2(k + 1) for k = 1..`ranks`, for vectorised DCGs (``rewards @ discounts``)."""
    return discounted([1.0] * ranks)


def apply_shape(rewards: Sequence[float], shape: Shape) -> list[float]:
    """`exp_inf`: r_k itself; `log_decay`: DCG@k:N = Σ_{m=k..N} r_m / log2(m+1).

    >>> [round(x, 4) for x in apply_shape([1.0, 0.0, 1.0], "log_decay")]
    [1.5, 0.5, 0.5]
    """
    if shape == "exp_inf":
        return list(rewards)
    if shape != "log_decay":
        raise ValueError(f"unknown shape {shape!r}")
    terms = discounted(rewards)
    out = [0.0] * len(terms)
    tail = 0.0
    for k in range(len(terms) - 1, -1, -1):
        tail += terms[k]
        out[k] = tail
    return out


def _indicator(
    item_ids: Sequence[str | None], flags: Sequence[int], relevant: frozenset[str]
) -> list[float]:
    """e_k · 1[L_k ∈ relevant] per rank."""
    return [float(e and item in relevant) for item, e in zip(item_ids, flags, strict=True)]


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
        raw = _indicator(item_ids, flags, labels.union)
    elif reward == "marginal":
        raw = [e * labels.p_hat.get(item, 0.0) for item, e in zip(item_ids, flags, strict=True)]  # type: ignore[arg-type]
    elif reward == "responder":
        if responder is None:
            raise ValueError("reward='responder' needs the responder index j")
        raw = _indicator(item_ids, flags, labels.responders[responder])
    else:
        raise ValueError(f"unknown reward {reward!r}")
    return apply_shape(raw, shape)


def responder_rank_rewards(
    item_ids: Sequence[str | None], labels: RequestLabels, *, shape: Shape = "exp_inf"
) -> list[list[float]]:
    """`rank_rewards(..., reward="responder", responder=j)` for every responder j, in order,
    with the eligibility computed once (the diagnostics need all J of them per list).

    >>> responder_rank_rewards(["a", "b"], RequestLabels.from_sets([{"a"}, {"b"}]))
    [[1.0, 0.0], [0.0, 1.0]]
    """
    flags = eligibility(item_ids, seen=labels.seen)
    return [apply_shape(_indicator(item_ids, flags, s), shape) for s in labels.responders]


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
