"""The source registry (``data/sources.toml``) and a checksum-verifying fetcher.

Every public file a pipeline reads is listed once with its URL, sha256, license and its path
inside an offline mirror. `fetch` returns a verified local path: from the mirror when one is
given, else from the download cache (downloading once). A checksum mismatch is an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import tomllib
import urllib.request
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from remark_data.config import Project
from remark_data.errors import RemarkError


class SourceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    license: str
    mirror_path: str
    description: str = ""


def load_registry(path: Path) -> dict[str, SourceEntry]:
    """Read ``sources.toml``: a ``[sources.<id>]`` table per public file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RemarkError(f"{path}: source registry not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RemarkError(f"{path}: cannot read the source registry ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RemarkError(f"{path}: malformed TOML: {exc}") from exc
    entries = {}
    for source_id, body in raw.get("sources", {}).items():
        try:
            entries[source_id] = SourceEntry.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            raise RemarkError(f"{path}: sources.{source_id}.{key}: {first['msg']}") from exc
    return entries


def _stat_key(stat: os.stat_result) -> dict[str, int]:
    # ctime changes on every write and cannot be set back by `touch`/`utime`, so an in-place
    # edit that keeps size and mtime still misses the memo.
    return {
        "inode": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
    }


def sha256_file(path: Path, *, cache: dict[str, dict[str, object]] | None = None) -> str:
    """sha256 of a file, memoised in `cache` by (path, inode, size, mtime, ctime) so big inputs
    hash once and an edited file is always hashed again."""
    stat = path.stat()
    key = str(path.resolve())
    if cache is not None:
        hit = cache.get(key)
        if hit and {k: hit.get(k) for k in _stat_key(stat)} == _stat_key(stat):
            return str(hit["sha256"])
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    if cache is not None:
        cache[key] = {**_stat_key(stat), "sha256": value}
    return value


def sha256_path(path: Path, *, cache: dict[str, dict[str, object]] | None = None) -> str:
    """sha256 of a file, or of a folder's (relative path, file sha256) list."""
    if path.is_file():
        return sha256_file(path, cache=cache)
    if path.is_dir():
        listing = [
            (str(p.relative_to(path)), sha256_file(p, cache=cache))
            for p in sorted(path.rglob("*"))
            if p.is_file()
        ]
        return hashlib.sha256(json.dumps(listing).encode()).hexdigest()
    raise RemarkError(f"{path}: no such file or folder")


class HashCache:
    """A JSON file of known file hashes under ``data/cache``; saved atomically, and only when
    it changed (so a run with nothing to do writes nothing). `verify` starts it empty: every
    input is hashed again."""

    def __init__(self, path: Path, *, verify: bool = False) -> None:
        self.path = path
        self.entries: dict[str, dict[str, object]] = {}
        # Missing or damaged: it is only a cache, rebuilt by hashing.
        if not verify:
            with contextlib.suppress(OSError, ValueError):
                self.entries = json.loads(path.read_text())
        self._saved = json.dumps(self.entries, sort_keys=True)

    def save(self) -> None:
        current = json.dumps(self.entries, sort_keys=True)
        if current == self._saved:
            return
        self._saved = current
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(self.entries))
        tmp.replace(self.path)


class Fetcher:
    """Resolves registry ids to verified local files.

    Examples
    --------
    >>> fetcher = Fetcher(Project.from_env(mirror=Path("../shared/corpus")))
    >>> fetcher.fetch("protoqa-dev-crowdsourced").name
    'dev.crowdsourced.jsonl'
    """

    def __init__(self, project: Project, *, verify: bool = False) -> None:
        self.project = project
        self.hashes = HashCache(project.data_dir / "cache" / "sha256.json", verify=verify)
        self._registry: dict[str, SourceEntry] | None = None

    @property
    def registry(self) -> dict[str, SourceEntry]:
        if self._registry is None:
            self._registry = load_registry(self.project.sources_registry)
        return self._registry

    def entry(self, source_id: str) -> SourceEntry:
        try:
            return self.registry[source_id]
        except KeyError as exc:
            raise RemarkError(
                f"{self.project.sources_registry}: unknown source id {source_id!r}"
            ) from exc

    def fetch(self, source_id: str) -> Path:
        entry = self.entry(source_id)
        if self.project.mirror is not None:
            path = self.project.mirror / entry.mirror_path
            if not path.is_file():
                raise RemarkError(f"source {source_id}: {path} not found in mirror")
        else:
            path = self._download(source_id, entry)
        actual = sha256_file(path, cache=self.hashes.entries)
        if actual != entry.sha256:
            raise RemarkError(
                f"source {source_id}: checksum mismatch for {path} "
                f"(expected {entry.sha256[:12]}…, got {actual[:12]}…)"
            )
        return path

    def _download(self, source_id: str, entry: SourceEntry) -> Path:
        target = (
            self.project.data_dir
            / "cache"
            / "sources"
            / entry.sha256
            / Path(entry.mirror_path).name
        )
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as tmp:
            try:
                with urllib.request.urlopen(entry.url, timeout=60) as response:
                    shutil.copyfileobj(response, tmp)
            except (OSError, ValueError) as exc:  # ValueError: a malformed URL
                Path(tmp.name).unlink(missing_ok=True)
                raise RemarkError(
                    f"source {source_id}: download of {entry.url} failed ({exc}); "
                    "use --mirror DIR or REMARK_MIRROR for an offline copy"
                ) from exc
        Path(tmp.name).replace(target)
        return target

    def resolve(self, *, files: dict[str, str], paths: dict[str, str]) -> dict[str, Path]:
        """Local paths for a spec's file roles: registry ids fetched, local paths checked."""
        resolved = {role: self.fetch(source_id) for role, source_id in files.items()}
        for role, raw in paths.items():
            path = Path(raw) if Path(raw).is_absolute() else self.project.root / raw
            if not path.exists():
                raise RemarkError(f"{role}: {path} not found")
            resolved[role] = path
        return resolved

    def fingerprint(self, path: Path) -> str:
        return sha256_path(path, cache=self.hashes.entries)
