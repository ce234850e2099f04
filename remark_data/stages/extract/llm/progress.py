"""What an extraction reports: the final `ExtractionSummary`, and `ExtractionProgress` snapshots
handed to a callback while it runs. Nothing here prints; the caller decides how to show them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(kw_only=True)
class ExtractionSummary:
    texts: int = 0
    unique_texts: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0  # requests sent again after a 429/5xx, timeout, dropped connection, bad reply
    ok: int = 0
    permanent: int = 0
    transient: int = 0
    dropped_titles: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # cache key -> answer

    def line(self) -> str:
        rate = self.requests / self.seconds if self.seconds else 0.0
        return (
            f"extract: {self.unique_texts} texts, {self.cache_hits} from cache, {self.requests} "
            f"requests ({rate:.2f}/s, {self.retries} retries): {self.ok} ok, {self.permanent} "
            "permanent failures, "
            f"{self.transient} transient failures; {self.dropped_titles} titles not in their text "
            f"dropped; tokens {self.prompt_tokens}+{self.completion_tokens}"
        )

    def tally(self) -> None:
        """Count the final states of `results`."""
        for result in self.results.values():
            state = result["state"]
            if state == "ok":
                self.ok += 1
                self.dropped_titles += result.get("dropped") or 0
            elif state == "permanent":
                self.permanent += 1
            else:
                self.transient += 1


@dataclass(frozen=True, kw_only=True)
class ExtractionProgress:
    """A snapshot of a run for progress display; texts are unique texts, cache hits included."""

    total: int
    done: int
    cached: int
    requests: int
    retries: int  # requests sent again
    retrying: int  # texts whose last attempt failed and that wait for another
    failed: int  # texts given up on in this run (transient or permanent)
    last_error: str | None
    seconds: float

    def status(self) -> str:
        """Everything but done/total, for the side of a progress bar."""
        rate = self.requests / self.seconds if self.seconds else 0.0
        status = (
            f"{self.cached} cached, {self.requests} requests ({rate:.2f}/s), "
            f"{self.retries} retries, {self.retrying} retrying, {self.failed} failed"
        )
        return f"{status}; last error: {self.last_error}" if self.last_error else status

    def line(self) -> str:
        """One line for a log: done/total, then `status()`."""
        return f"extract: {self.done}/{self.total} texts done, {self.status()}"


ProgressCallback = Callable[[ExtractionProgress], None]


@dataclass(kw_only=True)
class LiveCounters:
    """What a running extraction reports: counters beyond the summary's, and the callback
    (None: nothing is reported)."""

    summary: ExtractionSummary
    callback: ProgressCallback | None
    total: int
    done: int = 0
    failed: int = 0
    retrying: int = 0
    last_error: str | None = None
    started: float = field(default_factory=time.perf_counter)

    def report(self) -> None:
        if self.callback is None:
            return
        self.callback(
            ExtractionProgress(
                total=self.total,
                done=self.done,
                cached=self.summary.cache_hits,
                requests=self.summary.requests,
                retries=self.summary.retries,
                retrying=self.retrying,
                failed=self.failed,
                last_error=self.last_error,
                seconds=time.perf_counter() - self.started,
            )
        )

    async def tick(self) -> None:
        # Report even while every request hangs, so a quiet run still shows its state.
        while True:
            await asyncio.sleep(1.0)
            self.report()
