"""Publish the labels to the Hugging Face Hub: one dataset repository, a config per dataset.

`build_repo_folder` writes the exact repository: ``<config>/<split>-NNNNN-of-NNNNN.parquet`` per
dataset (plus an ``all`` config), row groups of ≥ 100k rows (or the whole table) so DuckDB reads
them well over ``hf://``, and a ``README.md`` card (YAML ``configs:``, licenses, sources with
checksums, statistics, how the labels were built). `upload_folder` sends it in one commit, unless
every file is already on the Hub byte for byte. The token comes from ``HF_TOKEN`` or the user's
login and is never written anywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import re
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.config import Project
from remark_data.errors import RemarkError
from remark_data.publish.card import card_sources, render_card
from remark_data.reports import Notify, labelled_pipelines, quiet
from remark_data.runner import RunFolder

#: Marks a folder `build_repo_folder` made, the only kind it will replace. Not uploaded.
MARKER = ".remark-publish.json"
#: The Hub's repository names, ASCII only: no path tricks, no control characters.
_REPO_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?")
ROW_GROUP_ROWS = 100_000
SHARD_ROWS = 500_000


def dataset_licenses(project: Project, pipelines: list[str]) -> dict[str, str]:
    """Each dataset's license: those of the files its run read, from ``data/sources.toml``
    (a new dataset needs no edit here)."""
    return {
        pipeline: "; ".join(dict.fromkeys(s["license"] for s in card_sources(project, [pipeline])))
        for pipeline in pipelines
    }


def check_repo_id(repo_id: str) -> str:
    """`repo_id` if it is a plain ``ORG/NAME``, else a `RemarkError`.

    Examples
    --------
    >>> check_repo_id("remark/reddit-labels")
    'remark/reddit-labels'
    >>> check_repo_id("remark/..")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    remark_data.errors.RemarkError: --repo-id must be ORG/NAME (...), got 'remark/..'
    """
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(
        _REPO_ID.fullmatch(part) and ".." not in part and "--" not in part for part in parts
    ):
        raise RemarkError(
            f"--repo-id must be ORG/NAME (letters, digits, '-', '_', '.'), got {repo_id!r}"
        )
    return repo_id


@dataclass(frozen=True, kw_only=True)
class BuiltRepo:
    folder: Path
    configs: dict[str, dict[str, int]]  # config -> split -> rows


def _write_split(frame: pl.DataFrame, directory: Path, split: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    shards = max(1, -(-frame.height // SHARD_ROWS))
    paths = []
    for index in range(shards):
        part = frame.slice(index * SHARD_ROWS, SHARD_ROWS)
        path = directory / f"{split}-{index:05d}-of-{shards:05d}.parquet"
        part.write_parquet(
            path, row_group_size=max(ROW_GROUP_ROWS, part.height), compression="zstd"
        )
        paths.append(path)
    return paths


def _write_config(labels: pl.DataFrame, directory: Path) -> dict[str, int]:
    """Write one config's splits into `directory`; returns split -> rows."""
    rows = {}
    for (split,), part in labels.partition_by("split", as_dict=True, maintain_order=True).items():
        _write_split(part, directory, str(split))
        rows[str(split)] = part.height
    return rows


def _check_target(out: Path) -> None:
    """Refuse to replace anything but a folder this module built (or an empty one)."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir() or out.is_symlink():
        raise RemarkError(f"--out {out} exists and is not a folder; choose another path")
    if (out / MARKER).is_file() or not any(out.iterdir()):
        return
    raise RemarkError(
        f"--out {out} is a folder with files that `remark publish` did not write; "
        "choose an empty or new folder"
    )


def build_repo_folder(
    project: Project, *, pipelines: list[str], out: Path, repo_id: str
) -> BuiltRepo:
    """Write the repository folder to `out`, replaced atomically: built beside it, then
    swapped in. `out` must be new, empty, or a folder built here before."""
    check_repo_id(repo_id)
    out = out.resolve()
    _check_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    configs: dict[str, dict[str, int]] = {}
    everything, stats = [], []
    year_tolerance: dict[str, int] = {}
    try:
        for pipeline in pipelines:
            store = RunFolder(project.runs_dir / pipeline)
            try:
                labels = store.read("aggregate", "labels")
                stats.append(store.read("stats", "stats"))
            except FileNotFoundError as exc:
                raise RemarkError(
                    f"{pipeline}: no labels yet; run `remark run {pipeline}` first"
                ) from exc
            manifest = store.manifest("ground")
            ground = {} if manifest is None else manifest.config.get("ground", {})
            if "year_tolerance" in ground:
                year_tolerance[pipeline] = int(ground["year_tolerance"])
            configs[pipeline] = _write_config(labels, tmp / pipeline)
            everything.append(labels)
        configs["all"] = _write_config(pl.concat(everything), tmp / "all")
        card = render_card(
            repo_id=repo_id,
            configs=configs,
            stats=pl.concat(stats),
            sources=card_sources(project, pipelines),
            year_tolerance=year_tolerance,
            licenses=dataset_licenses(project, pipelines),
        )
        (tmp / "README.md").write_text(card)
        (tmp / MARKER).write_text(json.dumps({"repo_id": repo_id, "pipelines": pipelines}))
        # Swap: the old folder moves aside first, so `out` is always whole or absent.
        old = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return BuiltRepo(folder=out, configs=configs)


def _git_blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _unchanged(api: Any, repo_id: str, folder: Path) -> bool:
    """Every local file is on the Hub with the same content, and nothing else is."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        info = api.dataset_info(repo_id, files_metadata=True)
    except RepositoryNotFoundError:
        return False
    remote = {s.rfilename: s for s in info.siblings or [] if not s.rfilename.startswith(".git")}
    local = {
        str(p.relative_to(folder)): p for p in folder.rglob("*") if p.is_file() and p.name != MARKER
    }
    if set(remote) != set(local):
        return False
    for name, path in local.items():
        sibling = remote[name]
        if sibling.lfs is not None:
            if hashlib.sha256(path.read_bytes()).hexdigest() != sibling.lfs.sha256:
                return False
        elif sibling.blob_id != _git_blob_id(path):
            return False
    return True


def _transport_errors() -> tuple[type[Exception], ...]:
    """What the Hub client raises when the endpoint is unreachable or answers oddly: OSError
    (requests-based releases), ValueError, and the httpx family's errors where installed."""
    errors: list[type[Exception]] = [OSError, ValueError]
    for module in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError):
            errors.append(importlib.import_module(module).HTTPError)
    return tuple(errors)


def upload(folder: Path, *, repo_id: str, private: bool = False) -> str | None:
    """Upload `folder` in one commit; returns the commit URL, or None when nothing changed."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()  # its retry warnings would break our one-line errors
    api = HfApi()  # endpoint from HF_ENDPOINT, token from HF_TOKEN or the saved login
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if _unchanged(api, repo_id, folder):
            return None
        commit = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=folder,
            ignore_patterns=[MARKER],
            commit_message="Publish ReMaRk labels (remark-data)",
        )
    except HfHubHTTPError as exc:
        status = getattr(exc.response, "status_code", "?")
        raise RemarkError(
            f"upload to {repo_id} failed (HTTP {status}); the folder {folder} is intact"
        ) from exc
    except _transport_errors() as exc:
        raise RemarkError(
            f"upload to {repo_id} failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            f"the folder {folder} is intact"
        ) from exc
    return str(commit.commit_url)


def tree(folder: Path) -> str:
    return "\n".join(
        f"{p.relative_to(folder)}  ({p.stat().st_size:,} bytes)"
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MARKER
    )


@dataclass(frozen=True, kw_only=True)
class Published:
    """What `publish_pipelines` did: the folder it built, its file listing for a dry run, or
    the Hub commit of the upload (None when nothing changed)."""

    built: BuiltRepo
    uploaded: bool
    listing: str | None = None
    commit: str | None = None


def publish_pipelines(
    project: Project,
    *,
    repo_id: str,
    pipelines: Sequence[str] | None = None,
    out: Path | None = None,
    dry_run: bool = False,
    private: bool = False,
    notify: Notify = quiet,
) -> Published:
    """Build the repository folder for `pipelines` (default: every run with labels) in `out`
    (default ``data/publish/ORG__NAME``), then upload it unless `dry_run`."""
    check_repo_id(repo_id)
    names = list(pipelines) if pipelines else labelled_pipelines(project)
    target = out or project.data_dir / "publish" / repo_id.replace("/", "__")
    built = build_repo_folder(project, pipelines=names, out=target, repo_id=repo_id)
    notify(f"built {built.folder}")
    if dry_run:
        return Published(built=built, uploaded=False, listing=tree(built.folder))
    commit = upload(built.folder, repo_id=repo_id, private=private)
    return Published(built=built, uploaded=True, commit=commit)
