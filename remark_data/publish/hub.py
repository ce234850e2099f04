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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from remark_data import __version__
from remark_data.config import Project
from remark_data.errors import RemarkError
from remark_data.pipeline import STAGE_NAMES
from remark_data.runner import RunFolder

#: Marks a folder `build_repo_folder` made, the only kind it will replace. Not uploaded.
MARKER = ".remark-publish.json"
#: The Hub's repository names, ASCII only: no path tricks, no control characters.
_REPO_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9])?")
ROW_GROUP_ROWS = 100_000
SHARD_ROWS = 500_000
LICENSES = {
    "protoqa": "CC-BY-4.0 (ProtoQA, iesl/protoqa-data)",
    "reddit_v2": "Reddit content: Reddit's terms, research use only (via Rank-GRPO's release)",
    "reddit_movies": "Reddit content: Reddit's terms, research use only; catalog: MovieLens terms",
    "reddit_books": "Reddit content: Reddit's terms, research use only; catalog: CC-BY-SA-4.0",
    "reddit_music": "Reddit content: Reddit's terms, research use only; catalogs: HetRec terms",
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


def _markdown_table(frame: pl.DataFrame) -> str:
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = [
        "| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.iter_rows()
    ]
    return "\n".join([header, rule, *rows])


def _card(
    *,
    repo_id: str,
    configs: dict[str, dict[str, int]],
    stats: pl.DataFrame,
    sources: list[dict[str, str]],
    year_tolerance: dict[str, int],
) -> str:
    lines = [
        "---",
        "license: other",
        "license_name: mixed-see-card",
        "task_categories:",
        "- text-generation",
        "tags:",
        "- recommendation",
        "- grpo",
        "- reward-modeling",
        "configs:",
    ]
    for config, splits in configs.items():
        lines.append(f"- config_name: {config}")
        lines.append("  data_files:")
        for split in splits:
            lines.append(f"  - split: {split}")
            lines.append(f"    path: {config}/{split}-*.parquet")
    lines.append("---")
    table = stats.select(
        "dataset",
        "split",
        "n_requests",
        "n_responders",
        "responders_mean",
        "single_responder_share",
        "single_mention_share",
        "union_to_sum",
        "group_size",
        "prop2_bound",
    )
    body = (
        f"""
# {repo_id.split("/")[-1]}: ReMaRk labels for GRPO recommenders

One row per request, labelled with **every** responder's items, instead of one row per responder.
Reward rank k with 1 when its item is in `union_item_ids` (the union of all responders' items);
`items[].p_hat` = c_i / n_x (the share of responders who named item i) is there for analysis.
Built by remark-data {__version__} from public multi-responder data.

```python
from datasets import load_dataset
ds = load_dataset("{repo_id}", "reddit_v2")   # configs: {", ".join(configs)}
```

## Configs and licenses

| config | splits (rows) | license |
|---|---|---|
"""
        + "\n".join(
            f"| `{c}` | {', '.join(f'{s} ({n:,})' for s, n in splits.items())} "
            f"| {LICENSES.get(c, 'see the sources')} |"
            for c, splits in configs.items()
        )
        + """

Reddit text and titles stay under Reddit's terms: research use only; do not redistribute
outside research. `all` concatenates every config (same columns; `dataset` tells them apart).

## Columns

`request_id`, `split`, `source`, `prompt`, `seen_titles`, `seen_item_ids`, `n_responders` (n_x),
`items` (item_id, title, year, creator, count c_i, p_hat), `union_item_ids`, `responder_item_ids`
(S_j per responder, in source order), `groundtruth_with_release_year` (the union as Rank-GRPO's
[title, year] pairs, so its trainer runs unchanged).

## How the labels were built

scrape (requests and responders: distinct comment authors other than the OP, bots and
`[deleted]`; ProtoQA: each raw answer with count k is k responders; Rank-GRPO rows: one responder
per row, grouped by exact prompt text) → extract (a catalog gazetteer for Reddit text, or the
source's own pre-extracted entities) → ground (normalised titles, a release-year tolerance
per dataset ("""
        + ", ".join(f"{name}: ±{years}" for name, years in sorted(year_tolerance.items()))
        + """ years), rapidfuzz, author/artist checks; unmatched and ambiguous mentions kept out of
the labels) → aggregate (c_i = responders naming item i, p̂_i = c_i / n_x,
union = {i : c_i ≥ 1}).

## Responder-noise statistics

"""
        + _markdown_table(table)
        + """

`single_responder_share`: requests with one responder (where ReMaRk equals per-responder
training); `single_mention_share`: union items only one responder named; `union_to_sum`:
Σ min(c_i, 1) / Σ c_i; `prop2_bound`: max/min std of G = `group_size` binary rewards
(Proposition 2; G is set per dataset).

## Sources

| source | sha256 | license |
|---|---|---|
"""
        + "\n".join(f"| {s['name']} | `{s['sha256']}` | {s['license']} |" for s in sources)
        + "\n"
    )
    return "\n".join(lines) + "\n" + body


def _sources(project: Project, pipelines: list[str]) -> list[dict[str, str]]:
    from remark_data.sources import load_registry

    registry = load_registry(project.sources_registry)
    by_sha = {entry.sha256: (name, entry.license) for name, entry in registry.items()}
    seen: dict[str, dict[str, str]] = {}
    for pipeline in pipelines:
        store = RunFolder(project.runs_dir / pipeline)
        for stage in STAGE_NAMES:
            manifest = store.manifest(stage)
            inputs = {} if manifest is None else manifest.inputs
            for role, value in inputs.items():
                name, license_ = by_sha.get(value.sha256, (f"{pipeline}:{role}", "see the source"))
                seen[value.sha256] = {"name": name, "sha256": value.sha256, "license": license_}
    return sorted(seen.values(), key=lambda s: s["name"])


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
            configs[pipeline] = {}
            for (split,), part in labels.partition_by(
                "split", as_dict=True, maintain_order=True
            ).items():
                _write_split(part, tmp / pipeline, str(split))
                configs[pipeline][str(split)] = part.height
            everything.append(labels)
        combined = pl.concat(everything)
        configs["all"] = {}
        for (split,), part in combined.partition_by(
            "split", as_dict=True, maintain_order=True
        ).items():
            _write_split(part, tmp / "all", str(split))
            configs["all"][str(split)] = part.height
        card = _card(
            repo_id=repo_id,
            configs=configs,
            stats=pl.concat(stats),
            sources=_sources(project, pipelines),
            year_tolerance=year_tolerance,
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
