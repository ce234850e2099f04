"""TRL: a conversational `datasets.Dataset` and reward functions with TRL's signature.

TRL calls a reward function with keywords: ``prompts``, ``completions``, ``completion_ids``,
every other dataset column (ours read the label columns) and ``trainer_state``, ``log_extra``,
``log_metric``; it logs the rewards under the function's ``__name__``. A row whose labels are
missing (another task in a mixed dataset) gets `None`, which TRL ignores for that reward.

    >>> reward = make_reward_func(reward="union")  # GRPOTrainer(reward_funcs=reward, ...)
    >>> reward.__name__
    'remark_union_exp_inf'
    >>> row = {"request_id": "r1", "responder_item_ids": [["m1"], ["m2"]],
    ...        "seen_item_ids": [], "seen_titles": [],
    ...        "items": [{"item_id": "m1", "title": "Arrival", "year": 2016, "p_hat": 0.5},
    ...                  {"item_id": "m2", "title": "Heat", "year": 1995, "p_hat": 0.5}]}
    >>> columns = {name: [value, value, None] for name, value in row.items()}
    >>> completions = ["1. Heat (1995)\\n2. Arrival", "1. Alien\\n2. Heat", "1. Heat"]
    >>> [round(r, 3) if r is not None else r for r in reward(
    ...     prompts=["p"] * 3, completions=completions, trainer_state=None, **columns)]
    [1.631, 0.631, None]
    >>> make_rank_reward_func(max_ranks=3)(prompts=["p"], completions=completions[:1],
    ...                                    **{k: v[:1] for k, v in columns.items()})
    [[1.0, 1.0, 0.0]]
    >>> import pickle  # multiprocessing reward managers ship rewards to workers
    >>> pickle.loads(pickle.dumps(reward))
    RewardFunction(reward='union', shape='exp_inf', max_ranks=20)
    >>> make_reward_func(shape="bogus")
    Traceback (most recent call last):
    ...
    ValueError: unknown shape 'bogus' (one of exp_inf, log_decay)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from remark_data.adapters.payload import PayloadScorer, conversational_prompt
from remark_data.rewards import RewardKind, Shape, completion_text

if TYPE_CHECKING:
    import datasets
    import polars as pl

_LABEL_COLUMNS = (
    "items", "responder_item_ids", "seen_item_ids", "seen_titles", "match_steps", "request_id"
)  # fmt: skip


def to_trl_dataset(labels: pl.DataFrame) -> datasets.Dataset:
    """Labels -> a TRL dataset: conversational `prompt` plus the label columns; with the
    semantic match step, `request` too: the request text as labelled, whose words are no match
    evidence (`TitleMatcher`), whatever a training script adds to the prompt it generates from."""
    import datasets
    import polars as pl

    semantic = labels.height > 0 and labels["match_steps"].list.contains("semantic").any()

    frame = labels.select(
        conversational_prompt(),
        "request_id",
        "dataset",
        "split",
        pl.col("items").list.eval(
            pl.struct(
                pl.element().struct.field("item_id"),
                pl.element().struct.field("title"),
                pl.element().struct.field("year"),
                pl.element().struct.field("aliases"),
                pl.element().struct.field("p_hat"),
            )
        ),
        "union_item_ids",
        "responder_item_ids",
        "seen_item_ids",
        "seen_titles",
        "match_steps",
        *([pl.col("prompt").alias("request")] if semantic else []),
    )
    return datasets.Dataset(frame.to_arrow())


def _rows(kwargs: dict[str, Any], n: int) -> list[dict[str, Any] | None]:
    rows: list[dict[str, Any] | None] = []
    for index in range(n):
        if kwargs.get("responder_item_ids") is None or kwargs["responder_item_ids"][index] is None:
            rows.append(None)
            continue
        row = {c: kwargs[c][index] for c in _LABEL_COLUMNS if kwargs.get(c) is not None}
        if kwargs.get("request") is not None:  # its words are no match evidence (`TitleMatcher`)
            row["prompt"] = kwargs["request"][index]
        rows.append(row)
    return rows


class RewardFunction:
    """A TRL reward function: one float per completion (DCG of the per-rank rewards).

    A module-level class, not a closure, so it pickles (as its arguments) for multiprocessing
    reward managers; arguments are checked when built.
    """

    per_rank: ClassVar[bool] = False

    def __init__(
        self, *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
    ) -> None:
        self.scorer = PayloadScorer(reward=reward, shape=shape, max_ranks=max_ranks)
        suffix = "_per_rank" if self.per_rank else ""
        self.__name__ = f"remark_{reward}_{shape}{suffix}"  # TRL logs rewards under this name

    def __call__(
        self, prompts: Sequence[Any] | None, completions: Sequence[Any], **kwargs: Any
    ) -> list[Any]:
        score = self.scorer.per_rank if self.per_rank else self.scorer.scalar
        rows = _rows(kwargs, len(completions))
        return [
            None if row is None else score(completion_text(completion), row)
            for completion, row in zip(completions, rows, strict=True)
        ]

    def __getstate__(self) -> dict[str, Any]:
        return self.scorer.__getstate__()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __repr__(self) -> str:
        scorer = self.scorer
        return (
            f"{type(self).__name__}(reward={scorer.reward!r}, shape={scorer.shape!r}, "
            f"max_ranks={scorer.max_ranks})"
        )


class RankRewardFunction(RewardFunction):
    """Per-rank variant for Rank-GRPO-style trainers: K floats per completion."""

    per_rank = True


def make_reward_func(
    *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
) -> RewardFunction:
    """A TRL reward function: one float per completion (DCG of the per-rank rewards).

    Raises ValueError for an unknown `reward` or `shape`, `reward="responder"` (these rows hold
    every responder) or a `max_ranks` that is not a positive integer.
    """
    return RewardFunction(reward=reward, shape=shape, max_ranks=max_ranks)


def make_rank_reward_func(
    *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
) -> RankRewardFunction:
    """Per-rank variant for Rank-GRPO-style trainers: K floats per completion."""
    return RankRewardFunction(reward=reward, shape=shape, max_ranks=max_ranks)
