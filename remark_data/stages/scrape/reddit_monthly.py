"""Monthly all-Reddit dumps (``RS_YYYY-MM.zst`` submissions, ``RC_YYYY-MM.zst`` comments) → threads.

A spec names a folder, a range of months and the request subreddits. Each month file is
streamed with the byte-level subreddit prefilter of `remark_data.stages.scrape.dumps` (only the
lines of the listed subreddits are parsed), the files are read in parallel by `workers`
processes, each into its own Arrow IPC file, and the threads are built from the kept records as
for a per-subreddit dump (`remark_data.stages.scrape.reddit_dumps.build_threads`).

Comments are read for `comment_months_after` months past the last month as well (when those
files exist), because a thread posted at the end of a month is answered in the next one.
"""

from __future__ import annotations

import multiprocessing
import re
import tempfile
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Self

import polars as pl
from pydantic import Field, model_validator

from remark_data.errors import RemarkError
from remark_data.stages.scrape import ScrapedSource, SourceFormat
from remark_data.stages.scrape.dumps import Quarantine, ingest_dump
from remark_data.stages.scrape.reddit_dumps import (
    COMMENT_SCHEMA,
    SUBMISSION_SCHEMA,
    ThreadOptions,
    build_threads,
    epoch,
)
from remark_data.stages.scrape.spec import SourceSpec

MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"
#: The compressed and plain containers a month file may come in, in the order looked for.
SUFFIXES = (".zst", ".gz", ".ndjson", ".jsonl")
_PREFIX = {"submissions": "RS", "comments": "RC"}


class RedditMonthly(SourceSpec, ThreadOptions):
    """Monthly all-Reddit dump files in one folder (or its subfolders), a month range and the
    subreddits to keep (required: a month of all Reddit is tens of GB)."""

    format: Literal["reddit_monthly"]
    roles: ClassVar[tuple[str, ...]] = ("dumps",)
    first_month: str = Field(pattern=MONTH, description="First month read, YYYY-MM.")
    last_month: str = Field(pattern=MONTH, description="Last month read, YYYY-MM.")
    comment_months_after: int = Field(
        default=1, ge=0, le=12, description="Months of comments read past `last_month`."
    )
    workers: int = Field(default=2, ge=1, le=256, description="Processes reading files.")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not self.subreddits:
            raise ValueError("reddit_monthly needs `subreddits`: which request subreddits to keep")
        if self.first_month > self.last_month:
            raise ValueError(f"first_month {self.first_month} is after {self.last_month}")
        return self

    def input_files(self, files: Mapping[str, Path]) -> dict[str, Path]:
        return {
            path.name: path for paths in self.month_files(files["dumps"]).values() for path in paths
        }

    def month_files(self, folder: Path) -> dict[str, list[Path]]:
        """role (submissions, comments) -> the month files read, in month order.

        Raises RemarkError naming every file of the range that is missing (the months past
        `last_month` are read only when present)."""
        found = _index(folder)
        wanted = months(self.first_month, self.last_month)
        last = self.last_month
        after = months(_shift(last, 1), _shift(last, self.comment_months_after))
        files: dict[str, list[Path]] = {}
        missing = []
        for role, prefix in _PREFIX.items():
            files[role] = []
            for month in wanted + (after if role == "comments" else []):
                path = found.get(f"{prefix}_{month}")
                if path is not None:
                    files[role].append(path)
                elif month in wanted:
                    missing.append(f"{prefix}_{month}")
        if missing:
            looked = "|".join(SUFFIXES)
            raise RemarkError(f"{folder}: no dump file for {', '.join(missing)} ({looked})")
        return files


def months(first: str, last: str) -> list[str]:
    """Every month from `first` to `last`, both included.

    >>> months("2019-11", "2020-02")
    ['2019-11', '2019-12', '2020-01', '2020-02']
    """
    found = []
    month = first
    while month <= last:
        found.append(month)
        month = _shift(month, 1)
    return found


def _shift(month: str, by: int) -> str:
    year, number = divmod(int(month[:4]) * 12 + int(month[5:]) - 1 + by, 12)
    return f"{year:04d}-{number + 1:02d}"


def _index(folder: Path) -> dict[str, Path]:
    """``RS_YYYY-MM`` / ``RC_YYYY-MM`` -> its file anywhere under `folder` (the torrents keep
    submissions and comments in subfolders); two containers of one month prefer `SUFFIXES`'
    order."""
    if not folder.is_dir():
        raise RemarkError(f"{folder}: not a folder of monthly dumps")
    name = re.compile(r"^(R[SC]_\d{4}-\d{2})(\.\w+)$")
    found: dict[str, tuple[int, Path]] = {}
    for path in folder.rglob("R[SC]_*"):
        match = name.match(path.name)
        if match and match[2] in SUFFIXES and path.is_file():
            rank = SUFFIXES.index(match[2])
            if match[1] not in found or rank < found[match[1]][0]:
                found[match[1]] = (rank, path)
    return {key: path for key, (_, path) in found.items()}


@dataclass(frozen=True, kw_only=True)
class _Job:
    path: Path
    role: str
    out: Path
    subreddits: list[str]
    since: int | None
    until: int | None


def _ingest(job: _Job) -> tuple[int, Quarantine]:
    """One month file into its Arrow IPC file (run in a worker process)."""
    quarantine = Quarantine()
    schema = SUBMISSION_SCHEMA if job.role == "submissions" else COMMENT_SCHEMA
    kept = ingest_dump(
        job.path,
        schema,
        job.out,
        quarantine=quarantine,
        subreddits=job.subreddits,
        since=job.since,
        until=job.until,
    )
    return kept, quarantine


def _run(jobs: list[_Job], *, workers: int) -> list[tuple[int, Quarantine]]:
    if workers == 1 or len(jobs) == 1:
        return [_ingest(job) for job in jobs]
    # spawn, not fork: a forked copy of a process running polars' thread pool can deadlock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
        return list(pool.map(_ingest, jobs))


def read_reddit_monthly(source: RedditMonthly, folder: Path, *, dataset: str) -> ScrapedSource:
    """Threads of `source`'s subreddits from the month files under `folder`."""
    files = source.month_files(folder)
    with tempfile.TemporaryDirectory(prefix="remark-monthly-") as tmp:
        jobs = [
            _Job(
                path=path,
                role=role,
                out=Path(tmp) / f"{role}-{position}.arrow",
                subreddits=list(source.subreddits),
                # Submissions carry the time range; comments follow their threads.
                since=epoch(source.since) if role == "submissions" else None,
                until=epoch(source.until) if role == "submissions" else None,
            )
            for role, paths in files.items()
            for position, path in enumerate(paths)
        ]
        results = _run(jobs, workers=source.workers)
        quarantine = Quarantine()
        for _, part in results:
            for kind, count in part.counts.items():
                quarantine.add(kind, count, [])
            quarantine.samples.extend(part.samples[: max(0, 20 - len(quarantine.samples))])
        frames = {
            role: pl.concat([pl.read_ipc(job.out) for job in jobs if job.role == role])
            for role in files
        }
    if frames["submissions"].is_empty():
        raise RemarkError(
            f"{folder}: no submission of {list(source.subreddits)} in "
            f"{source.first_month}..{source.last_month}"
        )
    scraped = build_threads(
        frames["submissions"],
        frames["comments"],
        quarantine=quarantine,
        dataset=dataset,
        source=source.name,
        split=source.split,
        options=source,
    )
    scraped.counters.update(
        {f"files.{role}": len(paths) for role, paths in files.items()}
        | {f"kept.{job.path.stem}": kept for job, (kept, _) in zip(jobs, results, strict=True)}
    )
    return scraped


def _read(source: RedditMonthly, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_reddit_monthly(source, files["dumps"], dataset=dataset)


FORMATS = (SourceFormat(spec=RedditMonthly, read=_read),)
