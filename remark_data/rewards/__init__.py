"""ReMaRk rewards: pure functions, no I/O, no polars or duckdb, cheap to import in a trainer.

>>> from remark_data.rewards import ListScorer, RequestLabels, group_advantages, rank_rewards
"""

from remark_data.rewards.core import (
    REWARD_KINDS,
    SHAPES,
    RequestLabels,
    RewardKind,
    Shape,
    apply_shape,
    check_reward,
    dcg,
    discounted,
    eligibility,
    group_advantages,
    rank_discounts,
    rank_rewards,
    responder_rank_rewards,
)
from remark_data.rewards.metrics import (
    dataset_metrics,
    ndcg_at_k,
    recall_at_k,
    responder_metric,
)
from remark_data.rewards.parse import ListItem, parse_line, parse_list
from remark_data.rewards.scoring import ListScorer, check_max_ranks, completion_text

__all__ = [
    "REWARD_KINDS",
    "SHAPES",
    "ListItem",
    "ListScorer",
    "RequestLabels",
    "RewardKind",
    "Shape",
    "apply_shape",
    "check_max_ranks",
    "check_reward",
    "completion_text",
    "dataset_metrics",
    "dcg",
    "discounted",
    "eligibility",
    "group_advantages",
    "ndcg_at_k",
    "parse_line",
    "parse_list",
    "rank_discounts",
    "rank_rewards",
    "recall_at_k",
    "responder_metric",
    "responder_rank_rewards",
]
