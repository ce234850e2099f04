"""The stage runner: fingerprinted, skip-when-unchanged, crash-safe stage outputs.

Layout of one pipeline run::

    data/runs/<pipeline>/<stage>            -> symlink to .versions/<stage>-<fingerprint>
    data/runs/<pipeline>/.versions/<stage>-<fingerprint>/<table>.parquet, manifest.json

A stage writes every table and its manifest into a temporary folder, renames the folder into
place and then swaps the ``<stage>`` symlink with ``os.replace``. Both renames are atomic, so a
reader (or a crash at any instant) sees either the previous complete version or the new one,
never a partial table. One run at a time holds ``data/runs/<pipeline>/.lock``; it removes the
leftovers of killed runs (temporary folders, stale versions) as it starts.

A stage's fingerprint covers its code: a digest of the syntax trees of the modules it runs and
every package module they import, so editing a stage re-runs it (and what reads its tables),
while a comment-only edit or a change to another stage's code does not.
"""

from __future__ import annotations

import ast
import errno
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import polars as pl

from remark_data import __version__
from remark_data.errors import RemarkError
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
_PACKAGE = "remark_data"


def _imported_modules(module: str, tree: ast.Module) -> Iterator[str]:
    """Package modules that `module` imports (absolute and relative, any depth)."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            yield base
            # `from remark_data.stages.scrape import protoqa` imports a submodule, not a name.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


@functools.cache
def _module_tree(module: str) -> tuple[str, ast.Module] | None:
    """(digest of the syntax tree, tree) of a package module; None for anything else."""
    if module != _PACKAGE and not module.startswith(f"{_PACKAGE}."):
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(), filename=spec.origin)
    # ast.dump leaves out comments and formatting: only edits that can change behaviour count.
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest(), tree


def code_digest(modules: Iterable[str], *, shallow: Iterable[str] = ()) -> str:
    """sha256 over the syntax trees of `modules` and every package module they import, plus
    the `shallow` modules alone (a module that wires every stage, whose imports would make
    each stage depend on all the others).

    Examples
    --------
    >>> stats = code_digest(["remark_data.stages.stats"])
    >>> stats == code_digest(["remark_data.stages.stats"])
    True
    >>> stats == code_digest(["remark_data.stages.aggregate"])
    False
    """
    seen: dict[str, str] = {}
    for module in shallow:
        found = _module_tree(module)
        if found is not None:
            seen[module] = found[0]
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        found = _module_tree(module)
        if found is None:
            continue
        seen[module], tree = found
        pending.extend(_imported_modules(module, tree))
    return hashlib.sha256(json.dumps(sorted(seen.items())).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class StageOutput:
    """What a stage computes: tables by name and counters worth reporting."""

    tables: dict[str, pl.DataFrame]
    counters: dict[str, int | float] = field(default_factory=dict)
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
    code_digest: str  # `code_digest` of the modules the stage runs
    code_version: str = field(default_factory=lambda: CODE_VERSION)

    @property
    def digest(self) -> str:
        payload = json.dumps(
            {
                "config": self.config_hash,
                "inputs": {k: v["sha256"] for k, v in sorted(self.inputs.items())},
                "upstream": dict(sorted(self.upstream.items())),
                "code": self.code_version,
                "code_digest": self.code_digest,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


class RunFolder:
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

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold this pipeline's run lock; a second run fails at once with one line naming the
        holder. The kernel drops a `flock` when its process dies, so a killed run never leaves
        a stale lock."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / ".lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            writable = True
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS) or not path.exists():
                raise
            # A read-only `data/`: runs where every stage is unchanged still work, and still
            # lock (flock needs no write access).
            fd = os.open(path, os.O_RDONLY)
            writable = False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                holder = path.read_text().strip() or "another process"
                raise RemarkError(
                    f"{self.root.name}: another run holds {path} ({holder}); wait for it to finish"
                ) from exc
            if writable:
                os.ftruncate(fd, 0)
                started = datetime.now(UTC).isoformat(timespec="seconds")
                holder = f"pid {os.getpid()} on {socket.gethostname()} since {started}"
                os.write(fd, holder.encode())
                self.clean_leftovers()
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def clean_leftovers(self) -> None:
        """Remove what killed runs left: temporary folders and links, and versions that no
        stage link points to. Call only while holding `lock`."""
        current = {
            link.resolve()
            for link in self.root.iterdir()
            if link.is_symlink() and _TMP_MARK not in link.name
        }
        for entry in self.root.iterdir():
            if entry.is_symlink() and _TMP_MARK in entry.name:
                entry.unlink(missing_ok=True)
        if self.versions.is_dir():
            for entry in self.versions.iterdir():
                if entry.resolve() not in current:
                    shutil.rmtree(entry, ignore_errors=True)

    def commit(
        self, *, stage: str, output: StageOutput, manifest: dict[str, Any]
    ) -> dict[str, Any]:
        """Write `output` as the stage's new version, atomically; returns the final manifest."""
        link = self.stage_dir(stage)
        previous = link.resolve() if link.is_symlink() else None
        self.versions.mkdir(parents=True, exist_ok=True)
        tmp = self.versions / f"{stage}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        rows = {}
        try:
            for name, frame in output.tables.items():
                table = conform(frame, name) if name in TABLES else frame
                table.write_parquet(tmp / f"{name}.parquet", row_group_size=100_000)
                rows[name] = table.height
            for file_name, text in output.files.items():
                (tmp / file_name).write_text(text)
            manifest = {**manifest, "tables": rows, "counters": output.counters}
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
            _fsync_dir(tmp)
        except BaseException:  # a full disk, an interrupt: leave no half-written version
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        final = self.versions / f"{stage}-{manifest['fingerprint'][:16]}-{uuid.uuid4().hex[:6]}"
        tmp.rename(final)
        link_tmp = self.root / f".{stage}{_TMP_MARK}{uuid.uuid4().hex[:8]}"
        link_tmp.symlink_to(final.relative_to(self.root))
        link_tmp.replace(self.stage_dir(stage))
        _fsync_dir(self.root)
        if previous is not None and previous != final:
            shutil.rmtree(previous, ignore_errors=True)
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
    store: RunFolder,
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
        and not previous.get("counters", {}).get("incomplete", 0)
        and previous.get("fingerprint") == digest
    ):
        return StageResult(stage=stage, status="skipped", manifest=previous)
    store.root.mkdir(parents=True, exist_ok=True)
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
        "code_digest": fingerprint.code_digest,
        "started_at": started_at,
        "compute_seconds": round(time.perf_counter() - started, 3),
    }
    committed = store.commit(stage=stage, output=output, manifest=manifest)
    return StageResult(stage=stage, status="ran", manifest=committed)
