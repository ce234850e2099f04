"""Errors that end a run: an unreachable endpoint, or one that refuses the key, URL or model
(HTTP 401/403/404), each as one RemarkError line naming the endpoint and the cause."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from remark_data.errors import RemarkError

if TYPE_CHECKING:
    from remark_data.config import LLMSpec

RETRYABLE_STATUS = {408, 409, 429}
# The endpoint, not the text, is wrong (key, permissions, URL or model name): stop the run.
_ENDPOINT_STATUS = {401: "check REMARK_LLM_API_KEY or OPENAI_API_KEY", 403: "check the API key"}


def root_cause(exc: BaseException) -> str:
    """The deepest cause of `exc` ("ConnectionRefusedError: [Errno 111] ..."): the openai error
    itself only says "Connection error."."""
    seen: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and node not in seen:
        seen.append(node)
        node = node.__cause__ or node.__context__
    for cause in reversed(seen):
        if str(cause).strip():
            return f"{type(cause).__name__}: {' '.join(str(cause).split())}"
    return type(seen[-1]).__name__


def endpoint_error(exc: Exception, *, spec: LLMSpec) -> RemarkError | None:
    """A RemarkError when `exc` says the endpoint itself is wrong (HTTP 401/403/404)."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    hint = _ENDPOINT_STATUS.get(exc.status_code)
    if exc.status_code == 404:
        hint = f"check base_url (usually ends in /v1) and model {spec.model!r}"
    if hint is None:
        return None
    message = " ".join(str(exc.message).split())[:200]
    return RemarkError(
        f"LLM endpoint {spec.base_url} answered HTTP {exc.status_code} ({message}); {hint}"
    )


def unreachable(exc: Exception, *, spec: LLMSpec) -> RemarkError:
    """The RemarkError for a probe that got no answer at all (refused, unknown host, timeout)."""
    import openai

    cause = root_cause(exc)
    if isinstance(exc, openai.APITimeoutError):
        cause = f"no answer within {spec.timeout:g}s ({cause}); raise [extract.llm] timeout"
    return RemarkError(
        f"LLM endpoint {spec.base_url} is unreachable: {cause}; check [extract.llm] base_url "
        "and that the server is running"
    )


def first_leaf(group: BaseExceptionGroup[Exception]) -> Exception:
    """The first exception of a (nested) task-group error."""
    first = group.exceptions[0]
    return first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def run_requests(requests: Coroutine[Any, Any, None]) -> None:
    """Run `requests` (`client.ask_all` or `ask_units`) to the end; whatever escapes them
    becomes one RemarkError (the first of a task group's, as itself when it is one)."""
    try:
        asyncio.run(requests)
    except RemarkError:
        raise
    except ExceptionGroup as group:  # from the task groups
        first = first_leaf(group)
        if isinstance(first, RemarkError):
            raise first from first.__cause__  # the HTTP error behind it
        raise RemarkError(f"LLM extraction failed: {root_cause(first)}") from group
    except Exception as exc:
        raise RemarkError(f"LLM extraction failed: {root_cause(exc)}") from exc
