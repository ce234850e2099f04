"""One pipeline's committed stage outputs: atomic versions behind symlinks, and the run lock.

Layout::

    data/runs/<pipeline>/<stage>            -> symlink to .versions/<stage>-<fingerprint>
    data/runs/<pipeline>/.versions/<stage>-<fingerprint>/<table>.parquet, manifest.json
    data/runs/<pipeline>/.lock              held (flock) by the run in progress

A stage writes every table and its manifest into a temporary folder, renames the folder into
place and then swaps the ``<stage>`` symlink with ``os.replace``. Both renames are atomic, so a
reader (or a crash at any instant) sees either the previous complete version or the new one,
never a partial table. One run at a time holds the lock; it removes the leftovers of killed runs
(temporary folders, stale versions) as it starts.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import socket
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from pydantic import ValidationError

from remark_data.errors import RemarkError
from remark_data.runner.manifest import Manifest
from remark_data.schemas import TABLES, conform

if TYPE_CHECKING:
    from remark_data.runner.stage import StageOutput

_TMP_MARK = ".tmp-"


class RunFolder:
    """The stage outputs of one pipeline under ``data/runs/<pipeline>``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = root / ".versions"

    def stage_dir(self, stage: str) -> Path:
        return self.root / stage

    def manifest(self, stage: str) -> Manifest | None:
        """The committed version's manifest; None when there is none (or it is from a release
        whose manifest format differs: the stage then simply runs again)."""
        path = self.stage_dir(stage) / "manifest.json"
        try:
            return Manifest.model_validate_json(path.read_bytes())
        except (FileNotFoundError, ValidationError):
            return None

    def table_path(self, stage: str, table: str) -> Path:
        """The parquet file of a committed table, resolved past the stage symlink."""
        path = self.stage_dir(stage).resolve() / f"{table}.parquet"
        if not path.is_file():
            raise FileNotFoundError(f"{self.root.name}: stage {stage!r} has no table {table!r}")
        return path

    def read(self, stage: str, table: str) -> pl.DataFrame:
        return pl.read_parquet(self.table_path(stage, table))

    def committed_tables(self, table_stages: Mapping[str, Sequence[str]]) -> dict[str, list[Path]]:
        """table name -> the parquet files that make it up (symlink paths, always current), for
        `table_stages` = table -> the stages that write it (`pipeline.TABLE_STAGES`)."""
        found: dict[str, list[Path]] = {}
        for table, stages in table_stages.items():
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

    def commit(self, *, stage: str, output: StageOutput, manifest: dict[str, object]) -> Manifest:
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
            committed = Manifest.model_validate(
                {**manifest, "tables": rows, "counters": output.counters}
            )
            (tmp / "manifest.json").write_text(committed.model_dump_json(indent=2))
            _fsync_dir(tmp)
        except BaseException:  # a full disk, an interrupt: leave no half-written version
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        final = self.versions / f"{stage}-{committed.fingerprint[:16]}-{uuid.uuid4().hex[:6]}"
        tmp.rename(final)
        link_tmp = self.root / f".{stage}{_TMP_MARK}{uuid.uuid4().hex[:8]}"
        link_tmp.symlink_to(final.relative_to(self.root))
        link_tmp.replace(self.stage_dir(stage))
        _fsync_dir(self.root)
        if previous is not None and previous != final:
            shutil.rmtree(previous, ignore_errors=True)
        return committed


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
