"""TRL: a conversational `datasets.Dataset` and reward functions with TRL's signature.

    >>> from remark_data.adapters.trl import make_reward_func  # doctest: +SKIP
    >>> GRPOTrainer(reward_funcs=make_reward_func(), train_dataset=ds)  # doctest: +SKIP

TRL passes every extra dataset column to reward functions as keyword arguments; ours read the
label columns. A row whose labels are missing (another task in a mixed dataset) gets `None`,
which TRL ignores for that reward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from remark_data.adapters.payload import PayloadScorer, conversational_prompt
from remark_data.rewards import RewardKind, Shape, completion_text

if TYPE_CHECKING:
    import datasets
    import polars as pl

RewardFunc = Callable[..., list[Any]]


def to_trl_dataset(labels: pl.DataFrame) -> datasets.Dataset:
    """Labels -> a TRL dataset: conversational `prompt` plus the label columns."""
    import datasets
    import polars as pl

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
                pl.element().struct.field("p_hat"),
            )
        ),
        "union_item_ids",
        "responder_item_ids",
        "seen_item_ids",
        "seen_titles",
    )
    return datasets.Dataset(frame.to_arrow())


def _rows(kwargs: dict[str, Any], n: int) -> list[dict[str, Any] | None]:
    columns = ("items", "responder_item_ids", "seen_item_ids", "seen_titles", "request_id")
    rows: list[dict[str, Any] | None] = []
    for index in range(n):
        if kwargs.get("responder_item_ids") is None or kwargs["responder_item_ids"][index] is None:
            rows.append(None)
            continue
        rows.append({c: kwargs[c][index] for c in columns if kwargs.get(c) is not None})
    return rows


def _reward_func(score: Callable[[str, dict[str, Any]], Any], name: str) -> RewardFunc:
    def reward_func(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[Any]:
        rows = _rows(kwargs, len(completions))
        return [
            None if row is None else score(completion_text(completion), row)
            for completion, row in zip(completions, rows, strict=True)
        ]

    reward_func.__name__ = name  # TRL logs rewards under the function's name
    return reward_func


def make_reward_func(
    *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
) -> RewardFunc:
    """A TRL reward function: one float per completion (DCG of the per-rank rewards)."""
    scorer = PayloadScorer(reward=reward, shape=shape, max_ranks=max_ranks)
    return _reward_func(scorer.scalar, f"remark_{reward}_{shape}")


def make_rank_reward_func(
    *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
) -> RewardFunc:
    """Per-rank variant for Rank-GRPO-style trainers: K floats per completion."""
    scorer = PayloadScorer(reward=reward, shape=shape, max_ranks=max_ranks)
    return _reward_func(scorer.per_rank, f"remark_{reward}_{shape}_per_rank")
