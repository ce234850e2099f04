"""Rank-GRPO's released Reddit-v2 rows, grouped back into requests.

The release has one row per (request, responder) and no thread id; rows of one request share the
exact prompt text, so requests are rebuilt by grouping on it. The request id is a stable hash of
that text. Accepted containers: JSON (a list, or ``{"samples": [...]}``), JSONL, parquet, and HF
``save_to_disk`` folders (a `Dataset`, or a `DatasetDict` whose split matches the spec's split).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

import polars as pl

from remark_data.errors import RemarkError
from remark_data.stages.scrape import (
    ScrapedSource,
    SourceFormat,
    mentions_table,
    requests_table,
    responses_table,
)
from remark_data.stages.scrape.spec import SourceSpec

REQUIRED_COLUMNS = ("prompt", "seen_titles", "groundtruth_with_release_year")


def prompt_request_id(prompt_text: str) -> str:
    """The stable request id of a Reddit-v2 prompt: ``rv2-`` + 16 hex digits of its sha256.

    >>> prompt_request_id("USER: a movie like Heat")
    'rv2-9d5db4da6cee072c'
    """
    return "rv2-" + hashlib.sha256(prompt_text.encode()).hexdigest()[:16]


def _load_save_to_disk(path: Path, split: str) -> pl.DataFrame:
    import datasets  # heavy; only this container needs it

    try:
        loaded = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        raise RemarkError(f"{path}: not a save_to_disk folder ({exc})") from exc
    if isinstance(loaded, datasets.DatasetDict):
        aliases = {"dev": "validation", "val": "validation", "valid": "validation"}
        name = split if split in loaded else aliases.get(split, split)
        if name not in loaded:
            raise RemarkError(f"{path}: no split {split!r} (has {sorted(loaded)})")
        loaded = loaded[name]
    return pl.from_arrow(loaded.data.table)  # type: ignore[return-value]


def load_rows(path: Path, *, split: str) -> pl.DataFrame:
    """Rank-GRPO rows from any released container, as a polars frame."""
    try:
        if path.is_dir():
            rows = _load_save_to_disk(path, split)
        elif path.suffix == ".parquet":
            rows = pl.read_parquet(path)
        elif path.suffix == ".jsonl":
            rows = pl.read_ndjson(path, infer_schema_length=None)
        elif path.suffix == ".json":
            raw = json.loads(path.read_text())
            samples = raw["samples"] if isinstance(raw, dict) else raw
            rows = pl.DataFrame(samples, infer_schema_length=None)
        else:
            raise RemarkError(
                f"{path}: unknown Rank-GRPO container (want .json, .jsonl, .parquet or a folder)"
            )
    except (json.JSONDecodeError, pl.exceptions.ComputeError, KeyError, TypeError) as exc:
        raise RemarkError(
            f"{path}: cannot read Rank-GRPO rows ({type(exc).__name__}: {exc})"
        ) from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in rows.columns]
    if missing:
        raise RemarkError(f"{path}: Rank-GRPO rows lack columns {missing}")
    return rows


def _texts_and_ids(rows: pl.DataFrame, *, source: str) -> pl.DataFrame:
    """Rows with prompt_text, completion_text, request_id, response_id and responder_index."""
    rows = rows.with_row_index("row")
    if "sample_id" not in rows.columns:
        rows = rows.with_columns(pl.format("row{}", "row").alias("sample_id"))
    rows = rows.with_columns(
        pl.col("prompt")
        .list.eval(pl.element().struct.field("content"))
        .list.join("\n\n")
        .alias("prompt_text"),
        pl.col("completion")
        .list.eval(pl.element().struct.field("content"))
        .list.join("\n\n")
        .alias("completion_text")
        if "completion" in rows.columns
        else pl.lit(None, dtype=pl.String).alias("completion_text"),
    )
    prompts = rows.select(pl.col("prompt_text").unique(maintain_order=True))
    prompts = prompts.with_columns(
        pl.Series("request_id", [prompt_request_id(t) for t in prompts["prompt_text"]])
    )
    return rows.join(prompts, on="prompt_text", how="left", maintain_order="left").with_columns(
        pl.format("{}/{}", pl.lit(source), "sample_id").alias("response_id"),
        pl.int_range(pl.len()).over("request_id").alias("responder_index"),
    )


def _mentions(rows: pl.DataFrame, requests: pl.DataFrame, *, dataset: str) -> pl.DataFrame:
    """Each row's ground-truth titles (the responder's), then each request's seen titles."""
    truth = (
        rows.select("request_id", "response_id", "responder_index", "groundtruth_with_release_year")
        .explode("groundtruth_with_release_year")
        .drop_nulls("groundtruth_with_release_year")
        .with_columns(pl.int_range(pl.len()).over("response_id").alias("position"))
        .pipe(
            mentions_table,
            dataset=dataset,
            mention_id=pl.format("{}#{}", "response_id", "position"),
            kind=pl.lit("movie"),
            surface=pl.col("groundtruth_with_release_year").list.get(0),
            year=pl.col("groundtruth_with_release_year")
            .list.get(1, null_on_oob=True)
            .cast(pl.Int64, strict=False),
        )
    )
    seen = (
        requests.select("request_id", "seen_titles")
        .explode("seen_titles")
        .drop_nulls("seen_titles")
        .with_columns(pl.int_range(pl.len()).over("request_id").alias("position"))
        .pipe(
            mentions_table,
            dataset=dataset,
            mention_id=pl.format("{}/seen#{}", "request_id", "position"),
            role=pl.lit("seen"),
            kind=pl.lit("movie"),
            surface=pl.col("seen_titles"),
        )
    )
    return pl.concat([truth, seen])


def read_rank_grpo_rows(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    rows = _texts_and_ids(load_rows(path, split=split), source=source)
    content_columns = [
        "prompt_text",
        "completion_text",
        "seen_titles",
        "groundtruth_with_release_year",
    ]
    duplicate_rows = rows.height - rows.select(content_columns).unique().height
    requests = (
        rows.sort("row")
        .group_by("request_id", maintain_order=True)
        .agg(
            pl.col("prompt_text").first().alias("prompt"),
            pl.col("seen_titles")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique(maintain_order=True)
            .alias("seen_titles"),
        )
        .pipe(requests_table, dataset=dataset, source=source, split=split)
    )
    return ScrapedSource(
        requests=requests,
        responses=responses_table(rows, dataset=dataset, text=pl.col("completion_text")),
        mentions=_mentions(rows, requests, dataset=dataset),
        counters={"rows": rows.height, "duplicate_rows": duplicate_rows},
    )


class RankGrpoRows(SourceSpec):
    """Rank-GRPO's released rows (JSON, JSONL, parquet or a save_to_disk folder)."""

    format: Literal["rank_grpo_rows"]
    roles: ClassVar[tuple[str, ...]] = ("rows",)


def _read(source: RankGrpoRows, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_rank_grpo_rows(
        files["rows"], dataset=dataset, source=source.name, split=source.split
    )


FORMATS = (SourceFormat(spec=RankGrpoRows, read=_read),)
