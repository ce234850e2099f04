"""Responder-noise diagnostics for a policy's lists (DESIGN.md "Definitions").

Given G grounded lists per request, computes how much of the advantage variance under
per-responder (Rank-GRPO) rewards is the draw of the responder J, and how often a group carries
no signal, under `responder` and under `union` rewards. Pure: numpy over in-memory lists.

Examples
--------
>>> from remark_data.rewards import RequestLabels
>>> group = RequestGroup("r", RequestLabels.from_sets([{"a"}, {"b"}]), [["a"], ["b"]])
>>> report = diagnose([group], ranks=1)
>>> report.responder_share_scaled, report.no_signal_cells_union  # both lists are in the union
(1.0, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from remark_data.rewards.core import (
    STD_EPSILON,
    RequestLabels,
    Shape,
    rank_discounts,
    rank_rewards,
    responder_rank_rewards,
)


@dataclass(frozen=True, slots=True)
class RequestGroup:
    """G grounded lists (item id or None per rank) generated for one request."""

    request_id: str
    labels: RequestLabels
    lists: Sequence[Sequence[str | None]]


def reward_tensors(
    group: RequestGroup, *, ranks: int, shape: Shape = "exp_inf"
) -> tuple[np.ndarray, np.ndarray]:
    """(responder rewards [J, G, K], union rewards [G, K]) for one group, lists padded to K:
    `rank_rewards` of each list, stacked."""
    labels = group.labels
    n_lists = len(group.lists)
    responder = np.zeros((labels.n_responders, n_lists, ranks))
    union = np.zeros((n_lists, ranks))
    for g, items in enumerate(group.lists):
        padded = list(items[:ranks]) + [None] * max(0, ranks - len(items))
        union[g] = rank_rewards(padded, labels, reward="union", shape=shape)
        if labels.n_responders:
            responder[:, g] = responder_rank_rewards(padded, labels, shape=shape)
    return responder, union


def advantages(rewards: np.ndarray, *, scaled: bool) -> np.ndarray:
    """Group advantages over the G axis (second to last): (r − mean) / (std + 1e-4), unbiased."""
    centred = rewards - rewards.mean(axis=-2, keepdims=True)
    if not scaled:
        return centred
    return centred / (rewards.std(axis=-2, ddof=1, keepdims=True) + STD_EPSILON)


def sequence_reward(rewards: np.ndarray) -> np.ndarray:
    """One scalar per list for per-prompt statistics: `remark_data.rewards.dcg` over the last
    axis (the ranks), vectorised with the same discounts."""
    return rewards @ np.asarray(rank_discounts(rewards.shape[-1]))


@dataclass(frozen=True, slots=True)
class NoiseReport:
    """Diagnostics of one dataset split. Shares are in [0, 1]."""

    n_requests: int
    group_size_mean: float
    ranks: int
    multi_responder_share: float
    responder_share_scaled: float
    responder_share_unscaled: float
    no_signal_cells_responder: float
    no_signal_cells_union: float
    zero_std_prompts_responder: float
    zero_std_prompts_union: float

    def verdict(self) -> str:
        return (
            f"Under per-responder rewards the draw of the responder explains "
            f"{self.responder_share_scaled:.0%} of the advantage variance "
            f"({self.responder_share_unscaled:.0%} unscaled); union rewards remove it entirely. "
            f"No-signal (request, rank) cells: {self.no_signal_cells_responder:.0%} per-responder "
            f"vs {self.no_signal_cells_union:.0%} union; "
            f"{self.multi_responder_share:.0%} of requests have ≥ 2 responders."
        )

    def as_dict(self) -> dict[str, float | int | str]:
        return {**asdict(self), "verdict": self.verdict()}


class _Moments:
    """Running sums for Var(A) = E_cell[Var_J(A|cell)] + Var_cell(E_J[A|cell])."""

    def __init__(self) -> None:
        self.cells = 0
        self.within = 0.0
        self.mean_sum = 0.0
        self.mean_square_sum = 0.0

    def add(self, advantage: np.ndarray) -> None:  # [J, G, K]
        per_cell_mean = advantage.mean(axis=0)
        self.cells += per_cell_mean.size
        self.within += float(advantage.var(axis=0).sum())
        self.mean_sum += float(per_cell_mean.sum())
        self.mean_square_sum += float((per_cell_mean**2).sum())

    def share(self) -> float:
        if self.cells == 0:
            return math.nan
        within = self.within / self.cells
        between = self.mean_square_sum / self.cells - (self.mean_sum / self.cells) ** 2
        total = within + between
        return within / total if total > 0 else 0.0


def diagnose(
    groups: Sequence[RequestGroup], *, ranks: int | None = None, shape: Shape = "exp_inf"
) -> NoiseReport:
    """The variance decomposition and no-signal fractions over requests with G ≥ 2 lists.

    `ranks` (K) defaults to the longest list in the groups. A larger K pads lists with empty
    ranks, and every padded (request, rank) cell counts as no-signal: callers that take K from
    a user check it against the lists (`remark_data.diagnose.rollouts.diagnose_labels` does).
    """
    usable = [g for g in groups if len(g.lists) >= 2 and g.labels.n_responders >= 1]
    if ranks is None:
        ranks = max((len(items) for g in usable for items in g.lists), default=0)
    scaled, unscaled = _Moments(), _Moments()
    cells = cell_no_signal_resp = cell_no_signal_union = 0.0
    prompt_zero_resp = prompt_zero_union = 0.0
    for group in usable:
        responder, union = reward_tensors(group, ranks=ranks, shape=shape)
        scaled.add(advantages(responder, scaled=True))
        unscaled.add(advantages(responder, scaled=False))
        flat_resp = np.ptp(responder, axis=1) == 0  # [J, K]: all G rewards equal
        flat_union = np.ptp(union, axis=0) == 0  # [K]
        cells += ranks
        cell_no_signal_resp += float(flat_resp.mean(axis=0).sum())
        cell_no_signal_union += float(flat_union.sum())
        prompt_zero_resp += float((np.ptp(sequence_reward(responder), axis=1) == 0).mean())
        prompt_zero_union += float(np.ptp(sequence_reward(union)) == 0)
    n = len(usable)
    return NoiseReport(
        n_requests=n,
        group_size_mean=float(np.mean([len(g.lists) for g in usable])) if n else math.nan,
        ranks=ranks,
        multi_responder_share=(sum(g.labels.n_responders >= 2 for g in usable) / n)
        if n
        else math.nan,
        responder_share_scaled=scaled.share(),
        responder_share_unscaled=unscaled.share(),
        no_signal_cells_responder=cell_no_signal_resp / cells if cells else math.nan,
        no_signal_cells_union=cell_no_signal_union / cells if cells else math.nan,
        zero_std_prompts_responder=prompt_zero_resp / n if n else math.nan,
        zero_std_prompts_union=prompt_zero_union / n if n else math.nan,
    )
