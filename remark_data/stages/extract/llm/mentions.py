"""The `mentions` table from the answers of an extraction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remark_data.stages.extract.llm.cache import cache_key
from remark_data.stages.extract.llm.progress import ExtractionSummary

if TYPE_CHECKING:
    import polars as pl

    from remark_data.config import LLMSpec


def _kind(title: dict[str, Any], *, kinds: Sequence[str]) -> str | None:
    """One kind asked: that kind. Several: the kind the model gave, if it is one of them
    (else None, and the title is left out)."""
    if len(kinds) == 1:
        return kinds[0]
    return title.get("kind") if title.get("kind") in kinds else None


def llm_mentions(
    texts: pl.DataFrame, *, summary: ExtractionSummary, spec: LLMSpec, kinds: Sequence[str]
) -> pl.DataFrame:
    """The `mentions` table from the answers: one row per kept title of each text.

    `texts` is a polars frame of (dataset, request_id, response_id, responder_index, comment_id,
    text, role); `spec` and `kinds` are those `summary` was extracted with. The span is where the
    title first occurs in the text, ignoring case (null when the model rewrote it).
    """
    import polars as pl

    from remark_data.schemas import MENTION_FIELDS, SPAN_FIELDS, column_schema
    from remark_data.stages.extract import mention_prefix

    rows = []
    for dataset, request_id, response_id, index, comment_id, text, role in texts.select(
        "dataset", "request_id", "response_id", "responder_index", "comment_id", "text", "role"
    ).iter_rows():
        result = summary.results.get(cache_key(text, spec=spec, kinds=kinds)) or {}
        prefix = mention_prefix(request_id, response_id, comment_id)
        folded = text.casefold()
        for position, title in enumerate(result.get("titles") or []):
            kind = _kind(title, kinds=kinds)
            if kind is None:
                continue  # a kind the spec did not ask for: never grounded as one it did
            stance = title["stance"] if role == "response" else "referenced"
            start = folded.find(title["title"].casefold())
            rows.append(
                (
                    dataset,
                    request_id,
                    response_id,
                    index,
                    f"{prefix}#l{position}",
                    role,
                    kind,
                    title["title"],
                    title.get("year"),
                    title.get("creator"),
                    stance,
                    comment_id,
                    start if start >= 0 else None,
                    start + len(title["title"]) if start >= 0 else None,
                )
            )
    schema = column_schema("mentions", *MENTION_FIELDS, "stance", *SPAN_FIELDS)
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit("llm").alias("extractor")
    )
