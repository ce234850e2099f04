"""Where a policy's G lists per request come from, for `remark diagnose`.

- a rollouts JSONL: one line per request, ``{"request_id": ..., "completions": ["<list>", ...]}``
  (validated line by line);
- an OpenAI-compatible endpoint sampled G times per request (`remark_data.diagnose.endpoint`);
- a popularity sampler (items drawn by how often responders named them in the split).

Raw completions are grounded with the same `ListScorer` the trainer adapters use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, ValidationError

from remark_data.diagnose.popularity import item_popularity, popularity_bias
from remark_data.diagnose.variance import RequestGroup
from remark_data.errors import RemarkError
from remark_data.rewards import ListScorer, RequestLabels, dataset_metrics, parse_list

SAMPLED_RANKS = 10
"""K of the popularity sampler's lists when none is given (lists from a rollouts file or an
endpoint have their own length: K defaults to the longest of them)."""


@dataclass(kw_only=True)
class Rollouts:
    """Raw completions per request id, and where they came from (for messages)."""

    completions: dict[str, list[str]]
    source: str = "rollouts"


class RolloutLine(BaseModel):
    """One line of a rollouts JSONL. Strict: a string where the list of completions belongs
    would otherwise read as one one-character completion per letter."""

    model_config = ConfigDict(strict=True, extra="ignore")

    request_id: str
    completions: list[str]


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def read_rollouts(path: Path) -> Rollouts:
    """Read a rollouts JSONL (blank lines skipped); a bad line is a RemarkError naming it."""
    if not path.is_file():
        raise RemarkError(f"{path}: rollouts file not found")
    completions: dict[str, list[str]] = {}
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = RolloutLine.model_validate_json(line)
            except ValidationError as exc:
                raise RemarkError(
                    f"{path}:{number}: {_first_error(exc)} "
                    '(expected {"request_id": "...", "completions": ["<list>", ...]})'
                ) from exc
            completions.setdefault(record.request_id, []).extend(record.completions)
    return Rollouts(completions=completions, source=str(path))


def protoqa_prediction_rollouts(human: Path, gpt2: Path) -> Rollouts:
    """ProtoQA's released ranked answer lists as G = 2 real policy lists per question
    (human answers, fine-tuned GPT-2)."""
    lists: dict[str, list[str]] = {}
    for line in human.read_text().splitlines():
        for qid, answers in json.loads(line).items():
            lists.setdefault(qid, []).append("\n".join(a or "-" for a in answers))
    for qid, answers in json.loads(gpt2.read_text()).items():
        lists.setdefault(qid, []).append("\n".join(a or "-" for a in answers))
    return Rollouts(completions=lists, source="ProtoQA's released predictions")


def label_rows(labels: pl.DataFrame) -> list[dict[str, Any]]:
    """Label rows as the trainers get them: each item with its match strings (`aliases`), so
    diagnose matches completions exactly as a trainer's reward does."""
    return labels.to_dicts()


def groups_from_completions(
    rows: Sequence[Mapping[str, Any]],
    completions: Mapping[str, Sequence[str]],
    *,
    ranks: int | None = None,
) -> list[RequestGroup]:
    """Grounded groups for the rows that have completions; lists cut to `ranks` (None: whole)."""
    scorer = ListScorer(max_ranks=ranks)
    by_id = {row["request_id"]: row for row in rows}
    groups = []
    for request_id, texts in completions.items():
        row = by_id.get(request_id)
        if row is None:
            continue
        lists = [scorer.ground(text, row) for text in texts]
        groups.append(RequestGroup(request_id, RequestLabels.from_row(row), lists))
    return groups


def popularity_groups(
    rows: Sequence[Mapping[str, Any]], *, group_size: int, ranks: int, seed: int = 0
) -> list[RequestGroup]:
    """G lists per request of K distinct items drawn with probability ∝ the item's total
    count c_i over the rows (a policy that knows popularity and nothing about the request)."""
    counts: dict[str, int] = {}
    for row in rows:
        for item in row["items"]:
            counts[item["item_id"]] = counts.get(item["item_id"], 0) + item["count"]
    if len(counts) < ranks:
        raise RemarkError(
            f"popularity sampler needs at least {ranks} distinct items, found {len(counts)}"
        )
    ids = np.array(list(counts))
    weights = np.array(list(counts.values()), dtype=float)
    weights /= weights.sum()
    rng = np.random.default_rng(seed)
    return [
        RequestGroup(
            row["request_id"],
            RequestLabels.from_row(row),
            [
                list(rng.choice(ids, size=ranks, replace=False, p=weights))
                for _ in range(group_size)
            ],
        )
        for row in rows
    ]


def list_ranks(completions: Mapping[str, Sequence[str]]) -> int:
    """The longest parsed list among `completions` (every non-blank line is a rank)."""
    return max((len(parse_list(t)) for texts in completions.values() for t in texts), default=0)


def _ranks_for(
    rollouts: Rollouts | None, known: set[str], ranks: int | None
) -> tuple[int, dict[str, list[str]] | None]:
    """K, and the completions of known requests. Ranks past every list would all count as
    no-signal cells, so K defaults to the lists' own length and may not exceed it."""
    if ranks is not None and (isinstance(ranks, bool) or ranks < 1):
        raise RemarkError(f"K must be a positive number of ranks, got {ranks}")
    if rollouts is None:
        return (SAMPLED_RANKS if ranks is None else ranks), None
    matched = {r: texts for r, texts in rollouts.completions.items() if r in known}
    if not matched:
        example = next(iter(rollouts.completions), None)
        raise RemarkError(
            f"none of the {len(rollouts.completions)} request ids in {rollouts.source} is a "
            f"request of these labels (first: {example!r}); were the lists made for this "
            "pipeline and split?"
        )
    longest = list_ranks(matched)
    if longest == 0:
        raise RemarkError(f"{rollouts.source}: every completion of a known request is empty")
    if ranks is not None and ranks > longest:
        raise RemarkError(
            f"K = {ranks} ranks asked, but the longest list in {rollouts.source} has {longest} "
            f"ranks; leave K unset to use {longest}"
        )
    return (longest if ranks is None else ranks), matched


def diagnose_labels(
    labels: pl.DataFrame,
    *,
    policy: str,
    ranks: int | None = None,
    group_size: int = 8,
    seed: int = 0,
    rollouts: Rollouts | None = None,
) -> pl.DataFrame:
    """Diagnostics per (dataset, split) for lists from `rollouts` or the popularity sampler.

    `ranks` (K) defaults to the longest list of the rollouts that match the labels, and to
    `SAMPLED_RANKS` for the popularity sampler; a K longer than every list is a RemarkError.
    """
    from remark_data.diagnose.variance import diagnose

    known = set(labels["request_id"])
    k, matched = _ranks_for(rollouts, known, ranks)
    unknown = 0 if rollouts is None else len(rollouts.completions) - len(matched or {})
    results = []
    for (dataset, split), part in labels.partition_by(
        ["dataset", "split"], as_dict=True, maintain_order=True
    ).items():
        rows = label_rows(part)
        if matched is None:
            groups = popularity_groups(rows, group_size=group_size, ranks=k, seed=seed)
        else:
            groups = groups_from_completions(rows, matched, ranks=k)
        if not groups:
            continue
        report = diagnose(groups, ranks=k)
        metrics = dataset_metrics(((items, g.labels) for g in groups for items in g.lists), k)
        popularity = item_popularity(row["union_item_ids"] for row in rows)
        bias = popularity_bias(groups, popularity=popularity)
        results.append(
            {"dataset": dataset, "split": split, "policy": policy, **report.as_dict(), **metrics,
             **bias, "unknown_request_ids": unknown}
        )  # fmt: skip
    if not results:
        raise RemarkError(f"no request of the labels has lists from policy {policy!r}")
    return pl.DataFrame(results)
