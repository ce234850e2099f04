"""A stage as a record, what it produces, and `run_stage`: skip when unchanged, else compute
and commit atomically."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import polars as pl

from remark_data.runner.fingerprint import Fingerprint
from remark_data.runner.folder import RunFolder
from remark_data.runner.manifest import Manifest
from remark_data.schemas import StageName

if TYPE_CHECKING:
    from remark_data.config import PipelineSpec
    from remark_data.runner.context import StageContext


@dataclass(frozen=True, kw_only=True)
class StageOutput:
    """What a stage computes: tables by name and counters worth reporting."""

    tables: dict[str, pl.DataFrame]
    counters: dict[str, int | float] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # extra text files, e.g. stats.json


def _always(spec: PipelineSpec) -> bool:
    return True


def _no_inputs(context: StageContext) -> dict[str, Path]:
    return {}


@dataclass(frozen=True, kw_only=True)
class Stage:
    """One pipeline stage, declared once; the executor, the upstream map, the table→stage map,
    the DuckDB views and the publisher all derive from these records.

    `reads` are tables of earlier stages (each read from every enabled earlier stage that
    `writes` it: `mentions` = scrape's pre-extracted + extract's); `writes` the tables this
    stage is authoritative for (others it writes, like scrape's scoped catalog, are private).
    `modules(spec)` names the modules whose code it runs, for the code digest; `inputs(context)`
    the external files it reads, for their checksums.
    """

    name: StageName
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    sections: tuple[str, ...]
    compute: Callable[[StageContext], StageOutput]
    modules: Callable[[PipelineSpec], tuple[str, ...]]
    inputs: Callable[[StageContext], dict[str, Path]] = _no_inputs
    enabled: Callable[[PipelineSpec], bool] = _always


@dataclass(frozen=True, kw_only=True)
class StageResult:
    pipeline: str
    stage: str
    status: Literal["ran", "skipped"]
    manifest: Manifest


@dataclass(frozen=True, kw_only=True)
class Progress:
    """A line of progress from inside a stage (e.g. LLM requests done and retried)."""

    pipeline: str
    stage: str
    message: str


def run_stage(
    folder: RunFolder,
    *,
    pipeline: str,
    stage: str,
    fingerprint: Fingerprint,
    config: Mapping[str, object],
    compute: Callable[[], StageOutput],
    force: bool = False,
) -> StageResult:
    """Run `compute` unless the committed output has the same fingerprint (or `force`)."""
    digest = fingerprint.digest
    previous = folder.manifest(stage)
    unchanged = previous is not None and previous.fingerprint == digest
    # A stage that left work undone (e.g. transient LLM failures) runs again even if unchanged.
    if unchanged and not force and previous is not None and not previous.incomplete:
        return StageResult(pipeline=pipeline, stage=stage, status="skipped", manifest=previous)
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    output = compute()
    committed = folder.commit(
        stage=stage,
        output=output,
        manifest={
            "pipeline": pipeline,
            "stage": stage,
            "fingerprint": digest,
            "config": dict(config),
            "config_hash": fingerprint.config_hash,
            "inputs": fingerprint.inputs,
            "upstream": fingerprint.upstream,
            "package_version": fingerprint.code_version,
            "code_digest": fingerprint.code_digest,
            "started_at": started_at,
            "compute_seconds": round(time.perf_counter() - started, 3),
        },
    )
    return StageResult(pipeline=pipeline, stage=stage, status="ran", manifest=committed)
