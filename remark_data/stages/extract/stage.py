"""Stage 2, extract: mentions of catalog titles in response text (and, with `seen`, in the
request: the titles the requester has already seen), by a gazetteer or an LLM."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.config import PipelineSpec
from remark_data.errors import RemarkError
from remark_data.runner.context import StageContext
from remark_data.runner.stage import Stage, StageOutput
from remark_data.schemas import conform
from remark_data.stages.extract.gazetteer import Gazetteer, gazetteer_mentions
from remark_data.stages.extract.llm import (
    ExtractionSummary,
    cache_key,
    extract_with_llm,
    llm_mentions,
)
from remark_data.stages.extract.llm.hybrid import HybridTask, hybrid_mentions, plan_requests
from remark_data.stages.extract.llm.task import LLMTask
from remark_data.stages.extract.misspelled import misspelled_mentions


def comment_texts(responses: pl.DataFrame) -> pl.DataFrame:
    """One row per source comment of each response, with its own text: extraction reads one
    comment at a time, so evidence never spans two comments and every span is in one comment.

    >>> responses = pl.DataFrame({"dataset": ["d"], "request_id": ["t"], "response_id": ["t/a"],
    ...     "responder_index": [0], "text": ["Heat\\n\\nAlien (1979)"],
    ...     "comment_ids": [["c1", "c2"]], "comment_starts": [[0, 6]]})
    >>> comment_texts(responses).select("comment_id", "text").rows()
    [('c1', 'Heat'), ('c2', 'Alien (1979)')]
    """
    return (
        responses.select(
            "dataset",
            "request_id",
            "response_id",
            "responder_index",
            "text",
            pl.col("comment_ids").alias("comment_id"),
            pl.col("comment_starts").alias("start"),
        )
        .explode("comment_id", "start")
        .with_columns(
            # A comment ends where the blank line before the next one starts.
            pl.col("start").shift(-1).over("response_id").sub(2).alias("end"),
        )
        .with_columns(
            pl.col("text").str.slice(
                pl.col("start"),
                pl.col("end").fill_null(pl.col("text").str.len_chars()) - pl.col("start"),
            )
        )
        .drop("start", "end")
    )


def _texts(context: StageContext, *, seen: bool) -> pl.DataFrame:
    """Response comments (role `response`) and, with `seen`, request prompts (role `seen`)."""
    columns = ("dataset", "request_id", "response_id", "responder_index", "comment_id", "text")
    comments = comment_texts(context.read("responses").filter(pl.col("text").is_not_null()))
    frames = [comments.select(*columns, role=pl.lit("response"))]
    if seen:
        frames.append(
            context.read("requests").select(
                "dataset",
                "request_id",
                pl.lit(None, dtype=pl.String).alias("response_id"),
                pl.lit(None, dtype=pl.Int64).alias("responder_index"),
                pl.lit(None, dtype=pl.String).alias("comment_id"),
                pl.col("prompt").alias("text"),
                role=pl.lit("seen"),
            )
        )
    return pl.concat(frames)


def _with_gazetteer(context: StageContext) -> StageOutput:
    spec = context.spec.extract
    assert spec is not None
    catalog = context.resources.catalog()
    if catalog is None:
        raise RemarkError(f"{context.spec.name}: the gazetteer extractor needs a catalog")
    wanted = catalog.filter(pl.col("kind").is_in(spec.kinds))
    names = wanted.select("item_id", pl.concat_list("title", "aliases").alias("name"))
    gazetteer = Gazetteer(names.explode("name").drop_nulls().iter_rows())
    kind = spec.kinds[0] if len(spec.kinds) == 1 else None
    texts = _texts(context, seen=spec.seen)
    frames = [
        gazetteer_mentions(part.drop("role"), gazetteer, role=str(role), kind=kind)
        for (role,), part in texts.partition_by("role", as_dict=True, maintain_order=True).items()
    ]
    mentions = pl.concat([conform(f, "mentions") for f in frames])
    comments = texts.filter(pl.col("role") == "response")
    ground = context.spec.ground
    misspelled = pl.DataFrame()
    if "fuzzy" in ground.methods:  # only then can grounding find a misspelled title again
        misspelled = misspelled_mentions(
            comments,
            mentions,
            gazetteer.keys,
            prefixes=gazetteer.prefixes,
            cutoff=ground.fuzzy_cutoff,
            kind=kind,
        )
        mentions = pl.concat([mentions, conform(misspelled, "mentions")])
    return StageOutput(
        tables={"mentions": mentions},
        counters={
            "responses_scanned": comments["response_id"].n_unique(),
            "comments_scanned": comments.height,
            "mentions": mentions.height,
            "misspelled_titles": misspelled.height,
        },
    )


def _with_llm(context: StageContext) -> StageOutput:
    spec = context.spec.extract
    assert spec is not None and spec.llm is not None
    texts = _texts(context, seen=spec.seen).filter(pl.col("text").str.strip_chars() != "")
    summary = _ask(context, dict(enumerate(texts["text"])))
    mentions = llm_mentions(texts, summary=summary, spec=spec.llm, kinds=spec.kinds)
    return StageOutput(
        tables={"mentions": conform(mentions, "mentions")}, counters=_llm_counters(summary)
    )


def _with_hybrid(context: StageContext) -> StageOutput:
    """The gazetteer's candidates checked by the model, plus the titles it adds."""
    spec = context.spec.extract
    assert spec is not None and spec.llm is not None
    found = _with_gazetteer(context)
    candidates = found.tables["mentions"]
    comments = _texts(context, seen=False).filter(pl.col("text").str.strip_chars() != "")
    in_responses = candidates.filter(pl.col("role") == "response")
    prompts = dict(context.read("requests").select("request_id", "prompt").iter_rows())
    task = HybridTask(kinds=spec.kinds, few_shot=spec.llm.few_shot)
    messages, skipped = plan_requests(comments, in_responses, prompts, task)
    summary = _ask(context, messages, task=task)
    answers = {}
    for comment, message in messages.items():
        result = summary.results.get(cache_key(message, spec=spec.llm, kinds=spec.kinds, task=task))
        answers[comment] = result if result and result["state"] == "ok" else None
    responses, checked = hybrid_mentions(comments, in_responses, answers, kinds=spec.kinds)
    mentions = pl.concat(
        [conform(candidates.filter(pl.col("role") != "response"), "mentions"),
         conform(responses, "mentions")]
    )  # fmt: skip
    counters = (
        found.counters
        | _llm_counters(summary)
        | {
            "comments_asked": len(messages),
            "comments_skipped": skipped,
            "candidates": in_responses.height,
            **{f"candidates_{k}": v for k, v in checked.items() if k != "added"},
            "titles_added": checked["added"],
            "mentions": mentions.height,
        }
    )
    return StageOutput(tables={"mentions": mentions}, counters=counters)


def _ask(
    context: StageContext, texts: Mapping[Any, str], *, task: LLMTask | None = None
) -> ExtractionSummary:
    spec = context.spec.extract
    assert spec is not None and spec.llm is not None
    summary = extract_with_llm(
        texts,
        spec=spec.llm,
        kinds=spec.kinds,
        cache_path=context.project.data_dir / "cache" / "llm" / "extractions.sqlite",
        task=task,
        execution=context.spec.execution,
    )
    context.progress(summary.line())
    return summary


def _llm_counters(summary: ExtractionSummary) -> dict[str, int | float]:
    return {
        "texts": summary.texts,
        "unique_texts": summary.unique_texts,
        "cache_hits": summary.cache_hits,
        "requests": summary.requests,
        "retries": summary.retries,
        "ok": summary.ok,
        "permanent_failures": summary.permanent,
        "transient_failures": summary.transient,
        "dropped_titles": summary.dropped_titles,
        "prompt_tokens": summary.prompt_tokens,
        "completion_tokens": summary.completion_tokens,
        # A stage that left work undone runs again even if unchanged.
        "incomplete": summary.transient,
    }


def extract(context: StageContext) -> StageOutput:
    assert context.spec.extract is not None
    method = context.spec.extract.method
    if method == "llm":
        return _with_llm(context)
    if method == "hybrid":
        return _with_hybrid(context)
    return _with_gazetteer(context)


def _modules(spec: PipelineSpec) -> tuple[str, ...]:
    method = "gazetteer" if spec.extract is None else spec.extract.method
    gazetteer = ("remark_data.stages.extract.gazetteer", "remark_data.stages.extract.misspelled")
    modules = {
        "gazetteer": gazetteer,
        "llm": ("remark_data.stages.extract.llm",),
        "hybrid": (*gazetteer, "remark_data.stages.extract.llm"),
    }[method]
    return ("remark_data.stages.ground.catalogs", *modules)


def _catalog_inputs(context: StageContext) -> dict[str, Path]:
    return {f"catalog.{role}": p for role, p in context.resources.catalog_files().items()}


STAGE = Stage(
    name="extract",
    reads=("requests", "responses"),
    writes=("mentions",),
    sections=("catalog", "extract", "ground"),  # ground: the misspelling step's cutoff
    compute=extract,
    modules=_modules,
    inputs=_catalog_inputs,
    enabled=lambda spec: spec.extract is not None,
)
