"""`extract_with_llm`: what is cached is answered from the cache, the rest is asked."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remark_data.stages.extract.llm.cache import ExtractionCache, cache_key
from remark_data.stages.extract.llm.client import ask_all
from remark_data.stages.extract.llm.failures import run_requests
from remark_data.stages.extract.llm.progress import (
    ExtractionSummary,
    LiveCounters,
    ProgressCallback,
)
from remark_data.stages.extract.llm.task import LLMTask, TitleTask

if TYPE_CHECKING:
    from remark_data.config import ExecutionSpec, LLMSpec


def extract_with_llm(
    texts: Mapping[Any, str],
    *,
    spec: LLMSpec,
    kinds: Sequence[str],
    cache_path: Path,
    progress: ProgressCallback | None = None,
    task: LLMTask | None = None,
    execution: ExecutionSpec | None = None,
) -> ExtractionSummary:
    """Extract the titles of `kinds` from `texts` (id -> text), or run another `task` (the
    hybrid check); returns results keyed by `cache_key(text, spec=spec, kinds=kinds,
    task=task)`, and counters.

    `progress` (optional) gets an `ExtractionProgress` after each answer, before each retry and
    every second; nothing is printed. With `execution.engine = "ray"` the uncached requests
    run on Ray workers (`distributed`); this process still reads and writes the cache, so
    answers and counters are the same. Raises RemarkError when the endpoint is unreachable or
    refuses the key, URL or model; when every text is cached, no request is sent at all."""
    task = task or TitleTask(kinds)
    summary = ExtractionSummary(texts=len(texts))
    cache = ExtractionCache(cache_path)
    started = time.perf_counter()
    try:
        pending: dict[str, str] = {}
        for text in texts.values():
            key = cache_key(text, spec=spec, kinds=kinds, task=task)
            if key in summary.results or key in pending:
                continue
            hit = cache.get(key)
            if hit is not None and hit["state"] in ("ok", "permanent"):
                summary.cache_hits += 1
                summary.results[key] = hit
            else:  # new, or transient last time: ask again
                pending[key] = text
        summary.unique_texts = len(summary.results) + len(pending)
        if pending:
            live = LiveCounters(
                summary=summary,
                callback=progress,
                total=summary.unique_texts,
                done=summary.cache_hits,
            )
            _ask(pending, spec=spec, task=task, cache=cache, live=live, execution=execution)
            live.report()
    finally:
        cache.close()
    summary.tally()
    summary.seconds = time.perf_counter() - started
    return summary


def _ask(
    pending: Mapping[str, str],
    *,
    spec: LLMSpec,
    task: LLMTask,
    cache: ExtractionCache,
    live: LiveCounters,
    execution: ExecutionSpec | None,
) -> None:
    """Run the requests here, or on Ray; either way each answer is cached as it arrives."""
    if execution is not None and execution.engine == "ray":
        from remark_data.stages.extract.llm.distributed import ask_on_ray

        ask_on_ray(pending, spec=spec, task=task, cache=cache, live=live, execution=execution)
    else:
        run_requests(ask_all(pending, spec=spec, task=task, cache=cache, live=live))
