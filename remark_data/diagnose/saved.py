"""Diagnose reports kept beside the runs: ``data/runs/<pipeline>/diagnostics/<policy>.parquet``,
read back by `remark stats --plots` and shown as one DuckDB view by `remark db`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl


def save_diagnostics(runs_dir: Path, pipeline: str, report: pl.DataFrame) -> Path:
    """Keep a diagnose report as ``data/runs/<pipeline>/diagnostics/<policy>.parquet`` (atomic)."""
    directory = runs_dir / pipeline / "diagnostics"
    directory.mkdir(parents=True, exist_ok=True)
    policy = str(report["policy"][0])
    path = directory / (re.sub(r"[^A-Za-z0-9_.+-]+", "_", policy) + ".parquet")
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    report.write_parquet(tmp)
    tmp.replace(path)
    return path


def diagnostics_paths(runs_dir: Path) -> list[Path]:
    """Every kept diagnose report of every pipeline, sorted."""
    return sorted(runs_dir.glob("*/diagnostics/*.parquet"))


def read_diagnostics(runs_dir: Path) -> pl.DataFrame | None:
    """Every kept diagnose report as one frame (columns of older reports filled with nulls)."""
    paths = diagnostics_paths(runs_dir)
    return pl.concat([pl.read_parquet(p) for p in paths], how="diagonal_relaxed") if paths else None
