"""OpenRLHF: JSONL rows (``--input_key input --label_key label``) and a `reward_func` file for
``--remote_rm_url <this file>``.

OpenRLHF calls ``reward_func(queries, prompts, labels)`` where each query is the prompt followed
by the generated response and each label is the row's `label` string.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remark_data.adapters.payload import PayloadScorer, label_payload

if TYPE_CHECKING:
    import polars as pl

_SCORER = PayloadScorer()


def to_openrlhf_records(labels: pl.DataFrame) -> list[dict[str, str]]:
    return [
        {"input": row["prompt"], "label": json.dumps(label_payload(row))}
        for row in labels.iter_rows(named=True)
    ]


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str]
) -> dict[str, Any]:
    """Union rewards of the responses (query minus its prompt), as OpenRLHF expects."""
    import torch

    scores = []
    for query, prompt, label in zip(queries, prompts, labels, strict=True):
        response = query[len(prompt) :] if query.startswith(prompt) else query
        scores.append(_SCORER.scalar(response, label))
    rewards = torch.tensor(scores, dtype=torch.float32)
    return {"rewards": rewards, "scores": rewards, "extra_logs": {"remark_union_dcg": rewards}}
