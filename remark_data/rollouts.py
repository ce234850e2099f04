"""Where a policy's G lists per request come from, for `remark diagnose`.

- a rollouts JSONL: one line per request, ``{"request_id": ..., "completions": ["<list>", ...]}``;
- an OpenAI-compatible endpoint sampled G times per request;
- a popularity sampler (items drawn by how often responders named them in the split).

Raw completions are grounded with the same `ListScorer` the trainer adapters use.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from remark_data.diagnose import RequestGroup
from remark_data.errors import RemarkError
from remark_data.rewards import ListScorer, RequestLabels, dataset_metrics


@dataclass(kw_only=True)
class Rollouts:
    """Raw completions per request id, with what was skipped on the way in."""

    completions: dict[str, list[str]]
    malformed_lines: int = 0
    quarantine: list[str] = field(default_factory=list)


def read_rollouts(path: Path) -> Rollouts:
    """Read a rollouts JSONL; malformed lines are counted and kept aside, not fatal."""
    if not path.is_file():
        raise RemarkError(f"{path}: rollouts file not found")
    rollouts = Rollouts(completions={})
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                request_id = record["request_id"]
                completions = record["completions"]
                if not isinstance(request_id, str) or not all(
                    isinstance(c, str) for c in completions
                ):
                    raise TypeError("request_id must be a string and completions strings")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                rollouts.malformed_lines += 1
                rollouts.quarantine.append(f"{path}:{number}: {exc}")
                continue
            rollouts.completions.setdefault(request_id, []).extend(completions)
    return rollouts


def protoqa_prediction_rollouts(human: Path, gpt2: Path) -> Rollouts:
    """ProtoQA's released ranked answer lists as G = 2 real policy lists per question
    (human answers, fine-tuned GPT-2)."""
    lists: dict[str, list[str]] = {}
    for line in human.read_text().splitlines():
        for qid, answers in json.loads(line).items():
            lists.setdefault(qid, []).append("\n".join(a or "-" for a in answers))
    for qid, answers in json.loads(gpt2.read_text()).items():
        lists.setdefault(qid, []).append("\n".join(a or "-" for a in answers))
    return Rollouts(completions=lists)


def label_rows(labels: pl.DataFrame, catalog: pl.DataFrame) -> list[dict[str, Any]]:
    """Label rows whose items carry their catalog aliases (ProtoQA answer strings)."""
    aliases = catalog.select("item_id", "aliases").unique("item_id")
    exploded = (
        labels.select("request_id", "items")
        .explode("items")
        .unnest("items")
        .drop_nulls("item_id")
        .join(aliases, on="item_id", how="left")
    )
    items: dict[str, list[dict[str, Any]]] = {}
    for row in exploded.iter_rows(named=True):
        items.setdefault(row.pop("request_id"), []).append(row)
    rows = []
    for row in labels.iter_rows(named=True):
        rows.append({**row, "items": items.get(row["request_id"], [])})
    return rows


def groups_from_completions(
    rows: Sequence[Mapping[str, Any]], completions: Mapping[str, Sequence[str]], *, ranks: int
) -> list[RequestGroup]:
    """Grounded groups for the rows that have completions."""
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


async def _sample_endpoint(
    prompts: Mapping[str, str],
    *,
    base_url: str,
    model: str,
    group_size: int,
    temperature: float,
    concurrency: int,
    timeout: float,
) -> dict[str, list[str]]:
    import openai

    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=os.environ.get("OPENAI_API_KEY", "not-needed"),
        timeout=timeout,
        max_retries=3,
    )
    limit = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> str:
        async with limit:
            response = await client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": prompt}], temperature=temperature
            )
            return response.choices[0].message.content or ""

    try:
        # A TaskGroup cancels the outstanding requests as soon as one fails for good.
        async with asyncio.TaskGroup() as group:
            tasks = {
                request_id: [group.create_task(one(prompt)) for _ in range(group_size)]
                for request_id, prompt in prompts.items()
            }
    except* openai.APIConnectionError as errors:
        raise RemarkError(f"endpoint {base_url} unreachable ({errors.exceptions[0]})") from None
    except* openai.APIStatusError as errors:
        first = errors.exceptions[0]
        assert isinstance(first, openai.APIStatusError)
        raise RemarkError(
            f"endpoint {base_url} answered {first.status_code}: {first.message}"
        ) from None
    finally:
        await client.close()
    return {request_id: [t.result() for t in pending] for request_id, pending in tasks.items()}


def sample_endpoint(
    prompts: Mapping[str, str],
    *,
    base_url: str,
    model: str,
    group_size: int,
    temperature: float = 1.0,
    concurrency: int = 4,
    timeout: float = 60.0,
) -> Rollouts:
    """G completions per prompt from an OpenAI-compatible chat endpoint (key: OPENAI_API_KEY)."""
    completions = asyncio.run(
        _sample_endpoint(
            prompts,
            base_url=base_url,
            model=model,
            group_size=group_size,
            temperature=temperature,
            concurrency=concurrency,
            timeout=timeout,
        )
    )
    return Rollouts(completions=completions)


def diagnose_labels(
    labels: pl.DataFrame,
    catalog: pl.DataFrame,
    *,
    policy: str,
    ranks: int = 20,
    group_size: int = 8,
    seed: int = 0,
    rollouts: Rollouts | None = None,
) -> pl.DataFrame:
    """Diagnostics per (dataset, split) for lists from `rollouts` or the popularity sampler."""
    from remark_data.diagnose import diagnose

    known = set(labels["request_id"])
    unknown = 0 if rollouts is None else sum(r not in known for r in rollouts.completions)
    results = []
    for (dataset, split), part in labels.partition_by(
        ["dataset", "split"], as_dict=True, maintain_order=True
    ).items():
        rows = label_rows(part, catalog)
        if rollouts is None:
            groups = popularity_groups(rows, group_size=group_size, ranks=ranks, seed=seed)
        else:
            groups = groups_from_completions(rows, rollouts.completions, ranks=ranks)
        if not groups:
            continue
        report = diagnose(groups, ranks=ranks)
        metrics = dataset_metrics(((items, g.labels) for g in groups for items in g.lists), ranks)
        results.append(
            {"dataset": dataset, "split": split, "policy": policy, **report.as_dict(), **metrics,
             "unknown_request_ids": unknown,
             "malformed_lines": 0 if rollouts is None else rollouts.malformed_lines}
        )  # fmt: skip
    if not results:
        raise RemarkError(f"no request of the labels has lists from policy {policy!r}")
    return pl.DataFrame(results)


def save_diagnostics(runs_dir: Path, pipeline: str, report: pl.DataFrame) -> Path:
    """Keep a diagnose report as ``data/runs/<pipeline>/diagnostics/<policy>.parquet`` (atomic)."""
    import re

    directory = runs_dir / pipeline / "diagnostics"
    directory.mkdir(parents=True, exist_ok=True)
    policy = str(report["policy"][0])
    path = directory / (re.sub(r"[^A-Za-z0-9_.+-]+", "_", policy) + ".parquet")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    report.write_parquet(tmp)
    tmp.replace(path)
    return path


def read_diagnostics(runs_dir: Path) -> pl.DataFrame | None:
    paths = sorted(runs_dir.glob("*/diagnostics/*.parquet"))
    return pl.concat([pl.read_parquet(p) for p in paths], how="diagonal_relaxed") if paths else None
