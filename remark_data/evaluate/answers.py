"""`remark eval` on an answer gold: free-text answers to a question, each judged by a person to
belong to one of the question's answer clusters, or to none (a new valid answer, or invalid).

    {"dataset": "protoqa", "question_id": "r1q1", "answer": "its roots",
     "judgement": "cluster", "cluster": "r1q1.2"}

Each answer is sent as a one-line completion through the scorer the trainers call, on the row
the TRL export holds for its question, and through `remark diagnose`'s rows; both must give the
same number. Right: the gold cluster, or nothing for an answer no cluster holds. False match: a
cluster other than the gold one, or any cluster for an answer no cluster holds.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from remark_data.errors import RemarkError
from remark_data.evaluate.gold import read_lines
from remark_data.rewards import ListScorer


class GoldAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    dataset: str
    question_id: str
    answer: str
    judgement: Literal["cluster", "new_valid", "invalid"]
    cluster: str | None = None


def read_answer_gold(path: Path) -> list[GoldAnswer]:
    """Parse an answer gold file; a bad line is a `RemarkError` naming file and line."""
    gold = []
    for number, answer in read_lines(path, GoldAnswer):
        if (answer.judgement == "cluster") != (answer.cluster is not None):
            raise RemarkError(f"{path}:{number}: a cluster judgement, and only it, names a cluster")
        gold.append(answer)
    return gold


def ground_answers(
    gold: Sequence[GoldAnswer], rows: Mapping[str, Mapping[str, Any]]
) -> tuple[list[str | None], Counter[str]]:
    """The item each answer grounds to as a one-line completion, and the lines each matcher
    step matched."""
    scorer = ListScorer(max_ranks=None)
    found = [scorer.ground(g.answer, rows[g.question_id])[0] for g in gold]
    return found, Counter(scorer.matched_by)


def score_answers(
    gold: Sequence[GoldAnswer], found: Sequence[str | None], *, draws: int = 1000, seed: int = 0
) -> dict[str, object]:
    """Accuracy, false-match share and recall on clustered answers, with 95% bootstrap intervals
    over questions.

    >>> gold = [GoldAnswer(dataset="d", question_id="q", answer="a", judgement="cluster",
    ...                    cluster="q.0"),
    ...         GoldAnswer(dataset="d", question_id="q", answer="b", judgement="invalid")]
    >>> row = score_answers(gold, ["q.0", "q.1"], draws=10)
    >>> row["accuracy"], row["false_match_share"], row["recall_clustered"]
    (0.5, 0.5, 1.0)
    """
    outcomes: dict[str, list[tuple[bool, bool, bool]]] = {}
    for g, item in zip(gold, found, strict=True):
        right = item == g.cluster
        outcomes.setdefault(g.question_id, []).append(
            (right, item is not None and not right, g.cluster is not None)
        )

    def measure(questions: Sequence[str]) -> tuple[float, float, float]:
        cases = [case for q in questions for case in outcomes[q]]
        clustered = [right for right, _, has in cases if has]
        return (
            sum(right for right, _, _ in cases) / len(cases),
            sum(false for _, false, _ in cases) / len(cases),
            sum(clustered) / len(clustered) if clustered else float("nan"),
        )

    questions = list(outcomes)
    rng = random.Random(seed)
    samples = [measure(rng.choices(questions, k=len(questions))) for _ in range(draws)]
    row: dict[str, object] = {"answers": len(gold), "questions": len(questions)}
    for index, name in enumerate(("accuracy", "false_match_share", "recall_clustered")):
        values = sorted(s[index] for s in samples)
        row[name] = round(measure(questions)[index], 4)
        row[f"{name}_low"] = round(values[int(0.025 * (draws - 1))], 4)
        row[f"{name}_high"] = round(values[int(0.975 * (draws - 1))], 4)
    return row


def evaluate_answers(
    labels: pl.DataFrame, trainer_rows: Sequence[Mapping[str, Any]], gold: Sequence[GoldAnswer],
    *, draws: int = 1000, seed: int = 0,
) -> dict[str, object]:  # fmt: skip
    """Scores through the trainer export and through diagnose's rows; they must agree."""
    from remark_data.diagnose.rollouts import label_rows

    exported = {row["request_id"]: row for row in trainer_rows}
    missing = sorted({g.question_id for g in gold} - set(exported))
    if missing:
        raise RemarkError(f"{len(missing)} gold questions have no label row, e.g. {missing[0]}")
    found, by_step = ground_answers(gold, exported)
    diagnosed, _ = ground_answers(gold, {r["request_id"]: r for r in label_rows(labels)})
    row = score_answers(gold, found, draws=draws, seed=seed)
    row["diagnose_accuracy"] = score_answers(gold, diagnosed, draws=1)["accuracy"]
    row["level"] = "answer"
    row |= {f"matched_by.{step}": n for step, n in sorted(by_step.items())}
    return row
