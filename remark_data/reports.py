"""What the `remark` commands read from finished runs: label statistics, the grounding report,
the labels of a pipeline and its trainer exports.

Each command of the CLI makes one call here (or into `diagnose`, `publish`, `database`,
`pipeline`) and renders what comes back; progress lines reach it through a `Notify` callback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from remark_data.adapters.export import Trainer, export_labels
from remark_data.config import Project
from remark_data.errors import RemarkError
from remark_data.runner import RunFolder
from remark_data.schemas import GROUNDING_STATUSES
from remark_data.stages.ground.disambiguate import RULES

#: How library calls report progress ("wrote …", "built …"): one line for the user.
Notify = Callable[[str], None]


def quiet(message: str) -> None:
    """A `Notify` that shows nothing."""


def read_labels(project: Project, pipeline: str) -> pl.DataFrame:
    """The `labels` table of a pipeline's latest run, or a `RemarkError` saying to run it."""
    try:
        return RunFolder(project.runs_dir / pipeline).read("aggregate", "labels")
    except FileNotFoundError as exc:
        raise RemarkError(f"{pipeline}: no labels yet; run `remark run {pipeline}` first") from exc


def labelled_pipelines(project: Project) -> list[str]:
    """Every pipeline whose run got as far as the labels (aggregate), sorted."""
    return sorted(p.name for p in project.runs_dir.glob("*") if (p / "aggregate").exists())


def _pipelines_with_stats(project: Project, notify: Notify) -> list[str]:
    """Every pipeline whose run got as far as the statistics; the others are named to `notify`."""
    done: list[str] = []
    partial: list[str] = []
    for run_dir in sorted(p for p in project.runs_dir.glob("*") if p.is_dir()):
        finished = RunFolder(run_dir).manifest("stats") is not None
        (done if finished else partial).append(run_dir.name)
    if partial:
        notify(f"left out (not run up to stats yet): {', '.join(partial)}")
    return done


def grounding_report(project: Project, pipelines: Sequence[str]) -> pl.DataFrame:
    """Mentions per (dataset, role) and grounding status, one column per status that occurs,
    in `GROUNDING_STATUSES` order (unmatched and ambiguous mentions are kept, so they count);
    disambiguated mentions are split by the rule that resolved them (`disambiguated.thread`)."""
    frames = []
    for name in pipelines:
        groundings = RunFolder(project.runs_dir / name).read("ground", "groundings")
        status = pl.col("status")
        if "resolution" in groundings.columns:
            status = (
                pl.when(pl.col("resolution").is_not_null())
                .then(pl.format("{}.{}", "status", "resolution"))
                .otherwise("status")
            )
        frames.append(
            groundings.group_by("role", status.alias("status"))
            .len()
            .with_columns(pl.lit(name).alias("dataset"))
        )
    report = pl.concat(frames).pivot(on="status", index=["dataset", "role"], values="len")
    columns = [
        name
        for status in GROUNDING_STATUSES
        for name in (
            [f"{status}.{rule}" for rule in RULES] if status == "disambiguated" else [status]
        )
    ]
    present = [c for c in columns if c in report.columns]
    return report.select("dataset", "role", *[pl.col(c).fill_null(0) for c in present]).sort(
        "dataset", "role"
    )


@dataclass(frozen=True, kw_only=True)
class StatsReport:
    """The label statistics of some pipelines (one row per dataset and split), their grounding
    report when asked for, and the figures written."""

    pipelines: list[str]
    stats: pl.DataFrame
    grounding: pl.DataFrame | None = None
    figures: list[Path] = field(default_factory=list)

    def summary(self) -> pl.DataFrame:
        """The statistics as a short table: the columns a reader compares across datasets."""
        return self.stats.select(
            "dataset",
            "split",
            pl.col("n_requests").alias("requests"),
            pl.col("n_responders").alias("responders"),
            pl.format(
                "{} / {} / {}",
                pl.col("responders_mean").round(1),
                "responders_median",
                "responders_max",
            ).alias("n_x mean/med/max"),
            pl.col("single_responder_share").alias("n_x = 1"),
            pl.col("single_mention_share").alias("c_i = 1"),
            "union_to_sum",
            pl.format("{} @G={}", pl.col("prop2_bound").round(3), "group_size").alias("prop2"),
        )


def label_statistics(
    project: Project,
    pipelines: Sequence[str] | None = None,
    *,
    grounding: bool = False,
    plots: Path | None = None,
    notify: Notify = quiet,
) -> StatsReport:
    """The statistics of `pipelines`' latest runs (default: every run that has them), with
    the grounding report when `grounding`, and the figures written to `plots` when given."""
    names = list(pipelines) if pipelines else _pipelines_with_stats(project, notify)
    frames = []
    for name in names:
        try:
            frames.append(RunFolder(project.runs_dir / name).read("stats", "stats"))
        except FileNotFoundError as exc:
            raise RemarkError(f"{name}: no statistics yet; run `remark run {name}` first") from exc
    if not frames:
        raise RemarkError("no pipeline has been run yet; try `remark run protoqa`")
    stats = pl.concat(frames)
    figures = []
    if plots is not None:
        from remark_data.diagnose.plots import write_figures
        from remark_data.diagnose.saved import read_diagnostics

        labels = pl.concat([read_labels(project, name) for name in names])
        diagnostics = read_diagnostics(project.runs_dir)
        if diagnostics is not None:
            diagnostics = diagnostics.filter(pl.col("dataset").is_in(names))
        for path in write_figures(plots, labels=labels, stats=stats, diagnostics=diagnostics):
            notify(f"wrote {path}")
            figures.append(path)
    return StatsReport(
        pipelines=names,
        stats=stats,
        grounding=grounding_report(project, names) if grounding else None,
        figures=figures,
    )


def export_pipeline(
    project: Project, pipeline: str, *, trainer: Trainer, out: Path | None = None
) -> list[Path]:
    """Write a pipeline's labels in `trainer`'s format, one file or folder per split, under
    `out` (default ``data/exports/<pipeline>/<trainer>``); returns what was written."""
    target = out or project.data_dir / "exports" / pipeline / trainer
    return export_labels(read_labels(project, pipeline), trainer=trainer, out=target)
