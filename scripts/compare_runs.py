"""Compare two projects' outputs: every table of every stage, and the four trainer exports.

    python scripts/compare_runs.py BEFORE_PROJECT AFTER_PROJECT [PIPELINE ...]

Used to show that a refactor changed no output (exit 1 and a list of differences otherwise).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import polars as pl

from remark_data.adapters.export import TRAINERS, export_labels
from remark_data.pipeline import STAGE_NAMES
from remark_data.runner import RunFolder

PIPELINES = ("protoqa", "reddit_v2", "reddit_movies", "reddit_books", "reddit_music")


def _frames(path: Path) -> dict[str, pl.DataFrame]:
    """Every parquet under `path` (a file, or a folder of them), by relative name."""
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    return {str(f.relative_to(path.parent if path.is_file() else path)): pl.read_parquet(f)
            for f in files}  # fmt: skip


def _same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    return a.columns == b.columns and a.equals(b)


def compare(before: Path, after: Path, pipelines: list[str]) -> list[str]:
    differences = []
    for pipeline in pipelines:
        old, new = (RunFolder(root / "data" / "runs" / pipeline) for root in (before, after))
        for stage in STAGE_NAMES:
            if not old.stage_dir(stage).exists():
                continue
            for table in sorted(p.stem for p in old.stage_dir(stage).glob("*.parquet")):
                if not _same(old.read(stage, table), new.read(stage, table)):
                    differences.append(f"{pipeline}/{stage}/{table}")
        labels = (old.read("aggregate", "labels"), new.read("aggregate", "labels"))
        with tempfile.TemporaryDirectory() as tmp:
            for trainer in TRAINERS:
                outs = [Path(tmp) / side / trainer for side in ("before", "after")]
                for frame, out in zip(labels, outs, strict=True):
                    export_labels(frame, trainer=trainer, out=out)
                if not _exports_equal(*outs):
                    differences.append(f"{pipeline}/export/{trainer}")
    return differences


def _exports_equal(a: Path, b: Path) -> bool:
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    if files_a != files_b:
        return False
    for name in files_a:
        if name.suffix == ".parquet":
            if not _same(pl.read_parquet(a / name), pl.read_parquet(b / name)):
                return False
        elif name.name not in ("dataset_info.json", "state.json") and (
            (a / name).read_bytes() != (b / name).read_bytes()
        ):  # save_to_disk metadata carries fingerprints of its own
            return False
    return True


def main() -> None:
    before, after = Path(sys.argv[1]), Path(sys.argv[2])
    pipelines = sys.argv[3:] or list(PIPELINES)
    differences = compare(before, after, pipelines)
    for line in differences:
        print("differs:", line)
    print("identical" if not differences else f"{len(differences)} differences")
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
