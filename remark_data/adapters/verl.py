"""verl: RL parquet rows and a `compute_score` function for its custom reward hook.

Point verl at it with ``custom_reward_function.path=<this file>`` and
``custom_reward_function.name=compute_score``. `reward_model.ground_truth` is the JSON label
payload, so the function needs nothing but this module. ``custom_reward_function.reward_kwargs``
(`reward`, `shape`, `max_ranks`) reach `compute_score` as keywords and are checked before any
scoring. A module-level function and `PayloadScorer` both pickle, for verl's multiprocessing
reward managers.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from remark_data.adapters.payload import PayloadScorer, label_payload
from remark_data.rewards import RewardKind, Shape

if TYPE_CHECKING:
    import polars as pl

ABILITY = "recommendation"


@lru_cache(maxsize=8)
def _scorer(reward: RewardKind, shape: Shape, max_ranks: int) -> PayloadScorer:
    # One scorer (and row cache) per reward configuration; a bad one raises ValueError.
    return PayloadScorer(reward=reward, shape=shape, max_ranks=max_ranks)


def to_verl_frame(labels: pl.DataFrame) -> pl.DataFrame:
    """Labels -> verl's RL schema: data_source, prompt, ability, reward_model, extra_info."""
    import polars as pl

    rows = [
        {
            "data_source": f"remark/{row['dataset']}",
            "prompt": [{"role": "user", "content": row["prompt"]}],
            "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": json.dumps(label_payload(row))},
            "extra_info": {"request_id": row["request_id"], "split": row["split"], "index": index},
        }
        for index, row in enumerate(labels.iter_rows(named=True))
    ]
    return pl.DataFrame(rows)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | dict[str, Any],
    extra_info: Any = None,
    *,
    reward: RewardKind = "union",
    shape: Shape = "exp_inf",
    max_ranks: int = 20,
    **_: Any,
) -> float:
    """verl's reward signature: the reward of one completion as DCG over its ranks.

    Other keywords newer verl versions pass (a reward router's address, its tokenizer) are
    not used.
    """
    return _scorer(reward, shape, max_ranks).scalar(solution_str, ground_truth)
