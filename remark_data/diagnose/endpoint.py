"""G completions per request from an OpenAI-compatible chat endpoint, for `remark diagnose`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from remark_data.diagnose.rollouts import Rollouts
from remark_data.errors import RemarkError
from remark_data.stages.extract.llm import api_key_from_env


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
        api_key=api_key_from_env(),  # the rule LLM extraction follows
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
        raise RemarkError(f"endpoint {base_url} unreachable ({errors.exceptions[0]})") from errors
    except* openai.APIStatusError as errors:
        first = errors.exceptions[0]
        assert isinstance(first, openai.APIStatusError)
        raise RemarkError(
            f"endpoint {base_url} answered {first.status_code}: {first.message}"
        ) from errors
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
    """G completions per prompt from an OpenAI-compatible chat endpoint (`api_key_from_env`)."""
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
    return Rollouts(completions=completions, source=base_url)
