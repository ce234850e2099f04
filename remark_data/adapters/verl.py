"""verl: RL parquet rows and a `compute_score` function for its custom reward hook.

Point verl at it with ``custom_reward_function.path=<this file>`` and
``custom_reward_function.name=compute_score``. `reward_model.ground_truth` is the JSON label
payload, so the function needs nothing but this module.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from remark_data.adapters.payload import PayloadScorer, label_payload

if TYPE_CHECKING:
    import polars as pl

ABILITY = "recommendation"
_SCORER = PayloadScorer()


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
    data_source: str, solution_str: str, ground_truth: str | dict[str, Any], extra_info: Any = None
) -> float:
    """verl's reward signature: the union reward of one completion as DCG over its ranks."""
    return _SCORER.scalar(solution_str, ground_truth)
