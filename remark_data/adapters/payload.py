"""The label payload every adapter carries per row, and scoring from it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from remark_data.rewards import (
    ListScorer,
    RewardKind,
    Shape,
    check_max_ranks,
    check_reward,
    dcg,
)


def label_payload(row: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-able labels of one `labels` row; with the semantic match step, the request
    text too (its words are no match evidence: `TitleMatcher`)."""
    match_steps = list(row.get("match_steps") or ("normalized",))
    payload = {
        "request_id": row["request_id"],
        "dataset": row["dataset"],
        "items": [
            {
                "item_id": i["item_id"],
                "title": i["title"],
                "year": i["year"],
                "aliases": list(i["aliases"] or ()),
                "p_hat": i["p_hat"],
            }
            for i in row["items"]
        ],
        "union_item_ids": list(row["union_item_ids"]),
        "responder_item_ids": [list(ids) for ids in row["responder_item_ids"]],
        "seen_item_ids": list(row["seen_item_ids"]),
        "seen_titles": list(row["seen_titles"]),
        "match_steps": match_steps,
    }
    if "semantic" in match_steps:
        payload["prompt"] = row["prompt"]
    return payload


def conversational_prompt() -> Any:
    """The `prompt` column as a one-message chat ([{role: user, content: prompt}])."""
    import polars as pl

    return pl.concat_list(
        pl.struct(pl.lit("user").alias("role"), pl.col("prompt").alias("content"))
    ).alias("prompt")


class PayloadScorer:
    """Scores completions against JSON or dict payloads with one shared `ListScorer`.

    Arguments are checked when built. Pickles as its arguments alone: the per-row cache is
    rebuilt in the receiving process rather than shipped to every worker.
    """

    def __init__(
        self, *, reward: RewardKind = "union", shape: Shape = "exp_inf", max_ranks: int = 20
    ) -> None:
        check_reward(reward, shape)
        if reward == "responder":
            # Payload rows hold one request and every responder; S_j needs a drawn j per row.
            raise ValueError(
                "reward 'responder' needs one row per (request, responder); these rows hold "
                "every responder: use 'union' or 'marginal' (or the rank_grpo export)"
            )
        check_max_ranks(max_ranks)
        self.reward: RewardKind = reward
        self.shape: Shape = shape
        self.max_ranks = max_ranks
        self.scorer = ListScorer(max_ranks=max_ranks)

    def __getstate__(self) -> dict[str, Any]:
        return {"reward": self.reward, "shape": self.shape, "max_ranks": self.max_ranks}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(reward={self.reward!r}, shape={self.shape!r}, "
            f"max_ranks={self.max_ranks})"
        )

    def per_rank(self, text: str, payload: Mapping[str, Any] | str) -> list[float]:
        row = json.loads(payload) if isinstance(payload, str) else payload
        rewards = self.scorer.rewards(text, row, reward=self.reward, shape=self.shape)
        return rewards + [0.0] * (self.max_ranks - len(rewards))

    def scalar(self, text: str, payload: Mapping[str, Any] | str) -> float:
        """One reward per completion: the DCG of its per-rank rewards."""
        return dcg(self.per_rank(text, payload))
