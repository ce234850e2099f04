"""LLM requests on Ray (`[execution] engine = "ray"`).

This process keeps the cache: `extract_with_llm` has already deduplicated the texts by cache
key and answered what the cache holds, so only uncached requests are shipped, each to exactly
one worker. The requests are grouped as the local engine groups them (`group_requests`), so
each one carries the same prompt. Ray Data actors (`RequestWorker`) ask their batches with
the local engine's own code (`ask_units`: retries, probe, guard) and send the answers back;
this process writes each batch to the cache as it arrives. A run killed midway loses only the
batches in flight, and the next run, on either engine, asks only what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from remark_data.errors import RemarkError
from remark_data.stages.extract.llm.client import (
    api_key_from_env,
    ask_units,
    group_requests,
    record_answer,
)
from remark_data.stages.extract.llm.failures import root_cause, run_requests
from remark_data.stages.extract.llm.progress import ExtractionSummary, LiveCounters

if TYPE_CHECKING:
    import pyarrow as pa

    from remark_data.config import ExecutionSpec, LLMSpec
    from remark_data.stages.extract.llm.cache import ExtractionCache
    from remark_data.stages.extract.llm.task import LLMTask

# A worker mostly waits on HTTP: a quarter CPU each leaves the cores to the rest of the job.
WORKER_CPUS = 0.25


class _Answers:
    """A worker's `ResultSink`: the batch's answers, in arrival order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def put(self, key: str, **values: Any) -> None:
        self.rows.append({"key": key, "answer": json.dumps(values)})


class RequestWorker:
    """A Ray Data actor: asks the requests of a batch (rows of `keys`, `texts`) and returns a
    row per text (`key`, `answer` as JSON); the batch's request and retry counts ride on its
    first row, and `fatal` carries an error that ends the run (endpoint down, key refused)."""

    def __init__(self, *, spec: LLMSpec, task: LLMTask, api_key: str) -> None:
        self.spec = spec
        self.task = task
        self.api_key = api_key
        self.probed: set[str] = set()  # endpoints that have answered: no probe per batch

    def __call__(self, batch: pa.Table) -> pa.Table:
        import pyarrow as pa

        units = [list(zip(r["keys"], r["texts"], strict=True)) for r in batch.to_pylist()]
        answers = _Answers()
        live = LiveCounters(summary=ExtractionSummary(), callback=None, total=0)
        fatal = ""
        try:
            run_requests(
                ask_units(units, spec=self.spec, task=self.task, sink=answers, live=live,
                          probed=self.probed, api_key=self.api_key)
            )  # fmt: skip
        except RemarkError as exc:  # sent back as data: Ray would wrap the exception
            fatal = str(exc)
        rows = answers.rows or [{"key": "", "answer": ""}]
        counts = {"requests": live.summary.requests, "retries": live.summary.retries}
        return pa.Table.from_pylist(
            [row | (counts if i == 0 else dict.fromkeys(counts, 0)) | {"fatal": fatal}
             for i, row in enumerate(rows)]
        )  # fmt: skip


def ask_on_ray(
    pending: Mapping[str, str],
    *,
    spec: LLMSpec,
    task: LLMTask,
    cache: ExtractionCache,
    live: LiveCounters,
    execution: ExecutionSpec,
) -> None:
    """Ask for every (key -> text) of `pending` on Ray workers; each answer is written to
    `cache` and `live.summary.results` as its batch comes back. Raises RemarkError for an
    error that ends the run, after keeping every answer that came back before it."""
    import pyarrow as pa

    from remark_data.runner.ray_engine import map_batches

    units = group_requests(pending, spec=spec, task=task)
    table = pa.Table.from_pylist(
        [{"keys": [k for k, _ in unit], "texts": [t for _, t in unit]} for unit in units]
    )
    worker = {"spec": spec, "task": task.for_texts(pending.values()), "api_key": api_key_from_env()}
    batches = map_batches(
        table,
        RequestWorker,
        kwargs=worker,
        execution=execution,
        rows_per_batch=execution.batch_size,
        num_cpus=WORKER_CPUS,
    )
    try:
        for batch in batches:
            if fatal := _record(batch.to_pylist(), cache=cache, live=live):
                raise RemarkError(fatal)
    except RemarkError:
        raise
    except Exception as exc:  # a worker's crash, as Ray reports it
        raise RemarkError(f"LLM extraction on Ray failed: {root_cause(exc)[:500]}") from exc
    finally:
        batches.close()  # stops the batches in flight now, while Ray is still up


def _record(rows: list[dict[str, Any]], *, cache: ExtractionCache, live: LiveCounters) -> str:
    """Cache and count one batch's answers, as `ask_units` does locally; returns its fatal
    error ("" when none)."""
    summary = live.summary
    for row in rows:
        summary.requests += row["requests"]
        summary.retries += row["retries"]
        if row["key"]:
            record_answer(row["key"], json.loads(row["answer"]), sink=cache, live=live)
    live.report()
    return next((row["fatal"] for row in rows if row["fatal"]), "")
