"""The stage runner: fingerprinted, skip-when-unchanged, crash-safe stage outputs.

Layout of one pipeline run::

    data/runs/<pipeline>/<stage>            -> symlink to .versions/<stage>-<fingerprint>
    data/runs/<pipeline>/.versions/<stage>-<fingerprint>/<table>.parquet, manifest.json

A stage writes every table and its manifest into a temporary folder, renames the folder into
place and then swaps the ``<stage>`` symlink with ``os.replace``. Both renames are atomic, so a
reader (or a crash at any instant) sees either the previous complete version or the new one,
never a partial table. Leftover temporary folders of killed runs are removed on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import polars as pl

from remark_data import __version__
from remark_data.schemas import TABLES, conform, json_schemas

_TMP_MARK = ".tmp-"
#: Where each table of the data model lives in a run.
TABLE_STAGES: dict[str, tuple[str, ...]] = {
    "requests": ("scrape",),
    "responses": ("scrape",),
    "mentions": ("scrape", "extract"),
    "catalog": ("ground",),
    "groundings": ("ground",),
    "labels": ("aggregate",),
    "stats": ("stats",),
}
# Outputs depend on the package version and on the table schemas: a schema change re-runs stages.
_SCHEMA_DIGEST = hashlib.sha256(repr(sorted(json_schemas().items())).encode()).hexdigest()[:12]
CODE_VERSION = f"{__version__}+schema.{_SCHEMA_DIGEST}"


@dataclass(frozen=True, kw_only=True)
class StageOutput:
    """What a stage computes: tables by name and counters worth reporting."""

    tables: dict[str, pl.DataFrame]
    stats: dict[str, int | float] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # extra text files, e.g. stats.json


@dataclass(frozen=True, kw_only=True)
class StageResult:
    stage: str
    status: Literal["ran", "skipped"]
    manifest: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """Everything a stage's output depends on; equal fingerprints mean the stage can be skipped."""

    config_hash: str
    inputs: dict[str, dict[str, str]]  # role -> {"path", "sha256"}
    upstream: dict[str, str]  # stage -> fingerprint
    code_version: str = field(default_factory=lambda: CODE_VERSION)

    @property
    def digest(self) -> str:
        payload = json.dumps(
            {
                "config": self.config_hash,
                "inputs": {k: v["sha256"] for k, v in sorted(self.inputs.items())},
                "upstream": dict(sorted(self.upstream.items())),
                "code": self.code_version,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


class RunStore:
    """The stage outputs of one pipeline under ``data/runs/<pipeline>``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = root / ".versions"

    def stage_dir(self, stage: str) -> Path:
        return self.root / stage

    def manifest(self, stage: str) -> dict[str, Any] | None:
        path = self.stage_dir(stage) / "manifest.json"
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return None

    def table_path(self, stage: str, table: str) -> Path:
        """The parquet file of a committed table, resolved past the stage symlink."""
        path = self.stage_dir(stage).resolve() / f"{table}.parquet"
        if not path.is_file():
            raise FileNotFoundError(f"{self.root.name}: stage {stage!r} has no table {table!r}")
        return path

    def read(self, stage: str, table: str) -> pl.DataFrame:
        return pl.read_parquet(self.table_path(stage, table))

    def committed_tables(self) -> dict[str, list[Path]]:
        """table name -> the parquet files that make it up (symlink paths, always current).

        Each table has one authoritative stage, except `mentions`: the scrape stage's
        pre-extracted mentions plus the extract stage's.
        """
        found: dict[str, list[Path]] = {}
        for table, stages in TABLE_STAGES.items():
            paths = [self.stage_dir(s) / f"{table}.parquet" for s in stages]
            existing = [p for p in paths if p.is_file()]
            if existing:
                found[table] = existing
        return found

    def _clean_leftovers(self, stage: str) -> None:
        if not self.versions.is_dir():
            return
        current = self.stage_dir(stage).resolve() if self.stage_dir(stage).exists() else None
        for entry in self.versions.iterdir():
            if not entry.name.startswith(f"{stage}-") and not entry.name.startswith(
                f"{stage}{_TMP_MARK}"
            ):
                continue
            if entry != current:
                shutil.rmtree(entry, ignore_errors=True)

    def commit(
        self, *, stage: str, output: StageOutput, manifest: dict[str, Any]
    ) -> dict[str, Any]:
        """Write `output` as the stage's new version, atomically; returns the final manifest."""
        self.versions.mkdir(parents=True, exist_ok=True)
        tmp = self.versions / f"{stage}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        rows = {}
        for name, frame in output.tables.items():
            table = conform(frame, name) if name in TABLES else frame
            table.write_parquet(tmp / f"{name}.parquet", row_group_size=100_000)
            rows[name] = table.height
        for file_name, text in output.files.items():
            (tmp / file_name).write_text(text)
        manifest = {**manifest, "tables": rows, "stats": output.stats}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
        _fsync_dir(tmp)
        final = self.versions / f"{stage}-{manifest['fingerprint'][:16]}-{uuid.uuid4().hex[:6]}"
        tmp.rename(final)
        link_tmp = self.root / f".{stage}{_TMP_MARK}{uuid.uuid4().hex[:8]}"
        link_tmp.symlink_to(final.relative_to(self.root))
        link_tmp.replace(self.stage_dir(stage))
        _fsync_dir(self.root)
        self._clean_leftovers(stage)
        return manifest


def _fsync_dir(path: Path) -> None:
    for child in path.iterdir():
        if child.is_file():
            with child.open("rb") as handle:
                os.fsync(handle.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_stage(
    store: RunStore,
    *,
    pipeline: str,
    stage: str,
    fingerprint: Fingerprint,
    config: dict[str, Any],
    compute: Callable[[], StageOutput],
    force: bool = False,
) -> StageResult:
    """Run `compute` unless the committed output has the same fingerprint (or `force`)."""
    digest = fingerprint.digest
    previous = store.manifest(stage)
    # A stage that left work undone (e.g. transient LLM failures) runs again even if unchanged.
    if (
        not force
        and previous is not None
        and not previous.get("stats", {}).get("incomplete", 0)
        and previous.get("fingerprint") == digest
    ):
        return StageResult(stage=stage, status="skipped", manifest=previous)
    store.root.mkdir(parents=True, exist_ok=True)
    store._clean_leftovers(stage)
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    output = compute()
    manifest = {
        "pipeline": pipeline,
        "stage": stage,
        "fingerprint": digest,
        "config": config,
        "config_hash": fingerprint.config_hash,
        "inputs": fingerprint.inputs,
        "upstream": fingerprint.upstream,
        "package_version": fingerprint.code_version,
        "started_at": started_at,
        "compute_seconds": round(time.perf_counter() - started, 3),
    }
    committed = store.commit(stage=stage, output=output, manifest=manifest)
    return StageResult(stage=stage, status="ran", manifest=committed)
