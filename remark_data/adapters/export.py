"""`remark export --trainer NAME`: write a pipeline's labels in a trainer's format, per split.

Every export is written into a temporary folder and renamed into place, so an interrupted export
never leaves half a dataset.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Literal, get_args

import polars as pl

from remark_data.errors import RemarkError

Trainer = Literal["trl", "verl", "openrlhf", "rank_grpo"]
TRAINERS: tuple[Trainer, ...] = get_args(Trainer)


def check_trainer(name: str) -> Trainer:
    """`name` as a `Trainer`, or a `RemarkError` naming the choices."""
    for trainer in TRAINERS:
        if name == trainer:
            return trainer
    raise RemarkError(f"unknown trainer {name!r} (choose from {', '.join(TRAINERS)})")


def export_labels(labels: pl.DataFrame, *, trainer: Trainer, out: Path) -> list[Path]:
    """Write one file or folder per split under `out`; returns what was written."""
    check_trainer(trainer)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    written = []
    try:
        for (split,), part in labels.partition_by(
            "split", as_dict=True, maintain_order=True
        ).items():
            written.append(_write_split(part, trainer=trainer, directory=tmp, split=str(split)))
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [out / p.name for p in written]


def _write_split(part: pl.DataFrame, *, trainer: Trainer, directory: Path, split: str) -> Path:
    if trainer == "trl":
        from remark_data.adapters.trl import to_trl_dataset

        path = directory / split
        to_trl_dataset(part).save_to_disk(str(path))
    elif trainer == "rank_grpo":
        from remark_data.adapters.rank_grpo import to_rank_grpo_dataset

        path = directory / split
        to_rank_grpo_dataset(part).save_to_disk(str(path))
    elif trainer == "verl":
        from remark_data.adapters.verl import to_verl_frame

        path = directory / f"{split}.parquet"
        to_verl_frame(part).write_parquet(path)
    else:
        from remark_data.adapters.openrlhf import to_openrlhf_records

        path = directory / f"{split}.jsonl"
        with path.open("w") as handle:
            for record in to_openrlhf_records(part):
                handle.write(json.dumps(record) + "\n")
    return path
