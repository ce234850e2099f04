"""Requests to an OpenAI-compatible endpoint: retries with backoff and jitter, the fail-fast
probe, bounded concurrency, and each answer committed to the cache as it arrives."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from remark_data.stages.extract.llm.cache import ExtractionCache
from remark_data.stages.extract.llm.failures import RETRYABLE_STATUS, endpoint_error, unreachable
from remark_data.stages.extract.llm.progress import LiveCounters
from remark_data.stages.extract.llm.task import LLMTask

if TYPE_CHECKING:
    from remark_data.config import LLMSpec

PROBE_CONNECT_TIMEOUT = 10.0  # seconds to open a connection: a dead host fails fast

Result = dict[str, Any]  # one text's answer, as cached: state, titles, raw, error, ...


def api_key_from_env() -> str:
    """The API key for an OpenAI-compatible endpoint: ``REMARK_LLM_API_KEY``, else
    ``OPENAI_API_KEY``, else ``"not-needed"`` (local servers ignore it; the client needs one).
    Empty variables count as unset. Keys never come from a pipeline spec, so none is logged."""
    return os.environ.get("REMARK_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or "not-needed"


class _Request:
    """One request for `texts` (one text, or several short ones), asked again after a fault
    until answered or out of retries; `answer` gives a result per text.

    With `probe` (the run's first request), no answer at all (refused, unknown host, timeout)
    raises RemarkError instead of being retried: the endpoint is down, every text would fail.
    HTTP 401/403/404 raise RemarkError at any time: they do not heal."""

    def __init__(
        self, texts: Sequence[str], *, spec: LLMSpec, task: LLMTask, live: LiveCounters
    ) -> None:
        self.texts = list(texts)
        self.spec = spec
        self.task = task
        self.live = live
        self.messages, self.response_format = task.request(self.texts)
        self.raw: str | None = None  # the last reply
        self.error = ""  # the last fault
        self.schema_failures = 0
        self.waiting = False  # these texts are counted in live.retrying
        self.probe = False

    async def answer(self, client: Any, *, probe: bool = False) -> list[Result]:
        self.probe = probe
        try:
            for attempt in range(1, self.spec.max_retries + 2):
                outcome = await self._attempt(client, attempt=attempt)
                if isinstance(outcome, list):
                    return outcome
                if attempt <= self.spec.max_retries:
                    await self._wait(outcome)
            failure = {"state": "transient", "error": self.error}
            return [failure | {"attempts": self.spec.max_retries + 1} for _ in self.texts]
        finally:
            if self.waiting:
                self.live.retrying -= len(self.texts)

    async def _attempt(self, client: Any, *, attempt: int) -> list[Result] | float:
        """The results, or the delay before the next attempt."""
        import openai

        summary = self.live.summary
        summary.requests += 1
        summary.retries += int(attempt > 1)
        try:
            tokens = await self._send(client)
            parsed = self.task.parse(self.raw or "", n_texts=len(self.texts))
        except (ValidationError, ValueError, IndexError, AttributeError) as exc:
            self.schema_failures += 1
            self.error = f"schema: {str(exc)[:300]}"
            if self.schema_failures >= 2:
                failure = {"state": "permanent", "raw": self.raw, "error": self.error}
                return self._failed(failure, attempt=attempt)
            return 0.0  # a bad reply is asked again at once
        except openai.APIStatusError as exc:
            self.probe = False
            fatal = endpoint_error(exc, spec=self.spec)
            if fatal is not None:
                raise fatal from exc
            if exc.status_code < 500 and exc.status_code not in RETRYABLE_STATUS:
                error = f"HTTP {exc.status_code}: {exc.message[:300]}"
                return self._failed({"state": "permanent", "error": error}, attempt=attempt)
            self.error = f"HTTP {exc.status_code}"
            return self._backoff(attempt)
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            if self.probe:
                raise unreachable(exc, spec=self.spec) from exc
            self.error = type(exc).__name__
            return self._backoff(attempt)
        return self._answered(parsed, tokens=tokens, attempt=attempt)

    async def _send(self, client: Any) -> dict[str, int]:
        """Ask once; keeps the reply in `raw` and returns the token counts per text."""
        n = len(self.texts)
        response = await client.chat.completions.create(
            model=self.spec.model,
            messages=self.messages,
            temperature=self.spec.temperature,
            seed=self.spec.seed,
            max_tokens=self.spec.max_tokens * n,
            response_format=self.response_format,
        )
        self.probe = False  # it answered: later failures are the usual faults
        usage = response.usage
        # Token counts are shared out evenly over the texts of a batched request.
        tokens = {
            "prompt_tokens": (getattr(usage, "prompt_tokens", 0) or 0) // n,
            "completion_tokens": (getattr(usage, "completion_tokens", 0) or 0) // n,
        }
        self.raw = response.choices[0].message.content or ""
        return tokens

    def _answered(self, parsed: list[Any], *, tokens: dict[str, int], attempt: int) -> list[Result]:
        """A result per text, guarded by the task (titles not in their text are dropped)."""
        return [
            {"state": "ok", "raw": self.raw, "attempts": attempt, **tokens}
            | self.task.result(text, answer)
            for text, answer in zip(self.texts, parsed, strict=True)
        ]

    def _failed(self, failure: Result, *, attempt: int) -> list[Result]:
        """The same (permanent) failure for every text of the request."""
        return [failure | {"attempts": attempt} for _ in self.texts]

    def _backoff(self, attempt: int) -> float:
        return self.spec.backoff_base * 2 ** (attempt - 1)

    async def _wait(self, delay: float) -> None:
        if not self.waiting:
            self.waiting = True
            self.live.retrying += len(self.texts)
        self.live.last_error = self.error
        self.live.report()
        await asyncio.sleep(delay + random.uniform(0, delay))


def group_requests(
    texts: Mapping[str, str], *, spec: LLMSpec, task: LLMTask
) -> list[list[tuple[str, str]]]:
    """Group pending (key, text) pairs into requests: short texts several at a time."""
    single = [[(k, text)] for k, text in texts.items() if not task.batchable(text, spec=spec)]
    short = [(k, text) for k, text in texts.items() if task.batchable(text, spec=spec)]
    size = max(1, spec.batch_size)
    return single + [short[i : i + size] for i in range(0, len(short), size)]


class ResultSink(Protocol):
    """Where answers go as they arrive: the cache (local engine), or a Ray worker's batch."""

    def put(self, key: str, **values: Any) -> None: ...


def record_answer(
    key: str, result: dict[str, Any], *, sink: ResultSink, live: LiveCounters
) -> None:
    """One text's answer into `sink` (committed now: a kill loses only what is in flight) and
    the run's counters; the Ray engine records its workers' answers with it too."""
    sink.put(key, **result)
    summary = live.summary
    summary.results[key] = result
    summary.prompt_tokens += result.get("prompt_tokens", 0)
    summary.completion_tokens += result.get("completion_tokens", 0)
    live.done += 1
    live.failed += result["state"] != "ok"


Unit = list[tuple[str, str]]  # one request: (cache key, text) of each text it asks for


async def ask_units(
    units: Sequence[Unit],
    *,
    spec: LLMSpec,
    task: LLMTask,
    sink: ResultSink,
    live: LiveCounters,
    probed: set[str],
    api_key: str | None = None,
) -> None:
    """Ask each request of `units`, spread round-robin over the spec's endpoints; on an
    endpoint not in `probed` the first request goes alone (then it is added), and each endpoint
    has `concurrency` requests in flight. Each answer goes to `sink` and `live.summary.results`
    as it arrives. Shared by both engines: a Ray worker runs exactly this on its batch."""
    endpoints = spec.endpoints
    async with asyncio.TaskGroup() as group:
        for i, url in enumerate(endpoints):
            if part := list(units[i :: len(endpoints)]):
                on_endpoint = spec.model_copy(update={"base_url": url})
                group.create_task(
                    _ask_endpoint(part, spec=on_endpoint, task=task, sink=sink, live=live,
                                  probed=probed, api_key=api_key or api_key_from_env())
                )  # fmt: skip


async def _ask_endpoint(
    units: list[Unit],
    *,
    spec: LLMSpec,
    task: LLMTask,
    sink: ResultSink,
    live: LiveCounters,
    probed: set[str],
    api_key: str,
) -> None:
    """`ask_units` on one endpoint, `spec.base_url`."""
    import openai

    client = openai.AsyncOpenAI(
        base_url=spec.base_url,
        api_key=api_key,
        # Replies may take the whole `timeout`; opening a connection should not.
        timeout=openai.Timeout(spec.timeout, connect=min(spec.timeout, PROBE_CONNECT_TIMEOUT)),
        max_retries=0,
    )
    limit = asyncio.Semaphore(spec.concurrency)

    async def one(unit: Unit, *, probe: bool = False) -> None:
        request = _Request([text for _, text in unit], spec=spec, task=task, live=live)
        async with limit:
            results = await request.answer(client, probe=probe)
        for (key, _), result in zip(unit, results, strict=True):
            record_answer(key, result, sink=sink, live=live)
        live.report()

    try:
        rest = units
        if spec.base_url not in probed:
            # The first request goes alone: a dead endpoint fails in seconds, not after every
            # text's retries with backoff.
            await one(units[0], probe=True)
            probed.add(spec.base_url)
            rest = units[1:]
        async with asyncio.TaskGroup() as group:
            for unit in rest:
                group.create_task(one(unit))
    finally:
        await client.close()


async def ask_all(
    texts: Mapping[str, str],
    *,
    spec: LLMSpec,
    task: LLMTask,
    cache: ExtractionCache,
    live: LiveCounters,
) -> None:
    """Ask for every (key -> text) of `texts` (short texts several per request), each
    endpoint's first request alone, then `concurrency` at a time per endpoint; each answer goes
    to the cache and `live.summary.results` as it arrives."""
    units = group_requests(texts, spec=spec, task=task)
    ticker = asyncio.create_task(live.tick()) if live.callback is not None else None
    try:
        await ask_units(units, spec=spec, task=task, sink=cache, live=live, probed=set())
    finally:
        if ticker is not None:
            ticker.cancel()
