"""The `remark` command line: thin wrappers that parse arguments and call the library."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console
from rich.table import Table

from remark_data.config import Project
from remark_data.errors import RemarkError

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
schemas_app = typer.Typer(no_args_is_help=True, help="JSON Schema files of the tables.")
app.add_typer(schemas_app, name="schemas")

console = Console(width=max(Console().width, 120))
err_console = Console(stderr=True)


class _State:
    debug = False
    project: Project


state = _State()


class OutputFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
    mirror: Annotated[
        Path | None,
        typer.Option(
            help="Offline mirror of the public sources (or REMARK_MIRROR).", show_default=False
        ),
    ] = None,
    project_dir: Annotated[
        Path | None,
        typer.Option("--project-dir", help="Project root (default: current directory)."),
    ] = None,
) -> None:
    """remark-data: responder-marginalized reward datasets for GRPO recommenders."""
    state.debug = debug
    state.project = Project.from_env(root=project_dir, mirror=mirror)


def _print_frame(frame: pl.DataFrame, fmt: OutputFormat, *, title: str | None = None) -> None:
    if fmt is OutputFormat.csv:
        sys.stdout.write(frame.write_csv())
    elif fmt is OutputFormat.json:
        sys.stdout.write(json.dumps(frame.to_dicts(), indent=2, default=str) + "\n")
    else:
        table = Table(title=title)
        for column in frame.columns:
            table.add_column(column, overflow="fold")
        for row in frame.iter_rows():
            table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
        console.print(table)


@app.command()
def run(
    pipelines: Annotated[
        list[str], typer.Argument(help="Pipeline names (pipelines/<name>.toml) or spec paths.")
    ],
    stage: Annotated[
        list[str] | None, typer.Option("--stage", help="Run only these stages (repeatable).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-run stages even if unchanged.")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Hash every input again instead of trusting the memo."),
    ] = False,
) -> None:
    """Run pipelines: scrape → [extract] → ground → aggregate → stats."""
    from remark_data.pipeline import Event, run_pipelines
    from remark_data.runner import Progress

    def render(event: Event) -> None:
        if isinstance(event, Progress):
            err_console.print(f"  {event.stage}: {event.message}", markup=False)
            return
        manifest = event.manifest
        if event.status == "skipped":
            console.print(f"  [dim]{event.stage}: skipped (inputs and config unchanged)[/dim]")
            return
        rows = ", ".join(f"{t}={n:,}" for t, n in manifest.tables.items())
        console.print(f"  {event.stage}: ran in {manifest.compute_seconds:.2f}s ({rows})")

    current = None

    def announce(event: Event) -> None:  # a header as each pipeline's first event arrives
        nonlocal current
        if event.pipeline != current:
            current = event.pipeline
            console.print(f"[bold]{current}[/bold]")
        render(event)

    run_pipelines(
        state.project,
        pipelines,
        stages=tuple(stage) if stage else None,
        force=force,
        verify=verify,
        on_event=announce,
    )


@app.command()
def stats(
    pipelines: Annotated[
        list[str] | None, typer.Argument(help="Pipelines (default: all run).")
    ] = None,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
    plots: Annotated[
        Path | None, typer.Option(help="Also write the figures as PNG files here.")
    ] = None,
) -> None:
    """Print the label statistics of each pipeline's latest run."""
    from remark_data.runner import RunFolder

    names: list[str] = list(pipelines or [])
    if not names:  # every pipeline whose run got as far as the statistics; say which are left out
        partial: list[str] = []
        for run_dir in sorted(p for p in state.project.runs_dir.glob("*") if p.is_dir()):
            done = RunFolder(run_dir).manifest("stats") is not None
            (names if done else partial).append(run_dir.name)
        if partial:
            err_console.print(f"left out (not run up to stats yet): {', '.join(partial)}")
    frames = []
    for name in names:
        try:
            frames.append(RunFolder(state.project.runs_dir / name).read("stats", "stats"))
        except FileNotFoundError as exc:
            raise RemarkError(f"{name}: no statistics yet; run `remark run {name}` first") from exc
    if not frames:
        raise RemarkError("no pipeline has been run yet; try `remark run protoqa`")
    frame = pl.concat(frames)
    if plots is not None:
        from remark_data.diagnose.plots import write_figures
        from remark_data.diagnose.rollouts import read_diagnostics

        labels = pl.concat([_labels(name) for name in names])
        diagnostics = read_diagnostics(state.project.runs_dir)
        if diagnostics is not None:
            diagnostics = diagnostics.filter(pl.col("dataset").is_in(names))
        for path in write_figures(plots, labels=labels, stats=frame, diagnostics=diagnostics):
            err_console.print(f"wrote {path}")
    if fmt is OutputFormat.table:
        frame = frame.select(
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
    _print_frame(frame, fmt, title="ReMaRk label statistics")
    if fmt is OutputFormat.table:
        _print_frame(
            _grounding_report(names),
            fmt,
            title="Grounding of mentions (unmatched and ambiguous are kept)",
        )


def _grounding_report(names: list[str]) -> pl.DataFrame:
    from remark_data.runner import RunFolder

    frames = []
    for name in names:
        groundings = RunFolder(state.project.runs_dir / name).read("ground", "groundings")
        frames.append(
            groundings.group_by("role", "status").len().with_columns(pl.lit(name).alias("dataset"))
        )
    report = pl.concat(frames).pivot(on="status", index=["dataset", "role"], values="len")
    order = ["exact", "normalized", "year_tolerance", "fuzzy", "ambiguous", "unmatched"]
    present = [c for c in order if c in report.columns]
    return report.select("dataset", "role", *[pl.col(c).fill_null(0) for c in present]).sort(
        "dataset", "role"
    )


@app.command()
def db() -> None:
    """(Re)create data/remark.duckdb with a view per table of every run."""
    from remark_data.database import refresh_database

    counts = refresh_database(state.project)
    console.print(f"{state.project.database_path}: {len(counts)} views")
    _print_frame(
        pl.DataFrame({"view": list(counts), "rows": list(counts.values())}), OutputFormat.table
    )


@app.command()
def sql(
    query_text: Annotated[str, typer.Argument(metavar="QUERY", help="A read-only SQL query.")],
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Run a read-only SQL query against data/remark.duckdb."""
    from remark_data.database import query

    _print_frame(query(state.project, query_text), fmt)


class TrainerName(StrEnum):
    trl = "trl"
    verl = "verl"
    openrlhf = "openrlhf"
    rank_grpo = "rank_grpo"


def _labels(pipeline: str) -> pl.DataFrame:
    from remark_data.runner import RunFolder

    try:
        return RunFolder(state.project.runs_dir / pipeline).read("aggregate", "labels")
    except FileNotFoundError as exc:
        raise RemarkError(f"{pipeline}: no labels yet; run `remark run {pipeline}` first") from exc


@app.command()
def export(
    pipeline: Annotated[str, typer.Argument(help="A pipeline that has been run.")],
    trainer: Annotated[TrainerName, typer.Option(help="Target trainer format.")],
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default data/exports/<pipeline>/<trainer>).")
    ] = None,
) -> None:
    """Write a pipeline's labels in a trainer's format, one file or folder per split."""
    from remark_data.adapters.export import export_labels

    target = out or state.project.data_dir / "exports" / pipeline / trainer.value
    for path in export_labels(_labels(pipeline), trainer=trainer.value, out=target):
        console.print(f"wrote {path}")


@app.command()
def diagnose(
    pipeline: Annotated[str, typer.Argument(help="A pipeline that has been run.")],
    rollouts: Annotated[
        Path | None, typer.Option(help="Rollouts JSONL: {request_id, completions}.")
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL to sample lists from.")
    ] = None,
    model: Annotated[str, typer.Option(help="Model name for --endpoint.")] = "default",
    popularity: Annotated[
        bool, typer.Option("--popularity", help="Popularity-sampler baseline.")
    ] = False,
    protoqa_predictions: Annotated[
        bool,
        typer.Option("--protoqa-predictions", help="ProtoQA's released human and GPT-2 lists."),
    ] = False,
    group_size: Annotated[int, typer.Option("--group-size", "-G", min=2)] = 8,
    ranks: Annotated[
        int | None,
        typer.Option("--ranks", "-K", min=1, help="Ranks per list (default: the lists' length)."),
    ] = None,
    split: Annotated[str | None, typer.Option(help="Only this split.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many requests per run.")] = None,
    concurrency: Annotated[int, typer.Option(min=1)] = 4,
    seed: Annotated[int, typer.Option()] = 0,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """How much responder noise union rewards remove, for G lists per request."""
    from remark_data.diagnose.rollouts import (
        diagnose_labels,
        protoqa_prediction_rollouts,
        read_rollouts,
        sample_endpoint,
        save_diagnostics,
    )
    from remark_data.runner import RunFolder

    chosen = [rollouts is not None, endpoint is not None, popularity, protoqa_predictions]
    if sum(chosen) != 1:
        raise RemarkError(
            "choose exactly one of --rollouts, --endpoint, --popularity, --protoqa-predictions"
        )
    labels = _labels(pipeline)
    if split:
        labels = labels.filter(pl.col("split") == split)
    if limit:
        labels = labels.head(limit)
    catalog = RunFolder(state.project.runs_dir / pipeline).read("ground", "catalog")
    lists = None
    policy = "popularity"
    if rollouts is not None:
        lists, policy = read_rollouts(rollouts), f"rollouts:{rollouts.name}"
    elif protoqa_predictions:
        from remark_data.sources import Fetcher

        fetcher = Fetcher(state.project)
        lists = protoqa_prediction_rollouts(
            fetcher.fetch("protoqa-dev-predictions-human"),
            fetcher.fetch("protoqa-dev-predictions-gpt2"),
        )
        policy = "protoqa-human+gpt2"
    elif endpoint is not None:
        prompts = dict(zip(labels["request_id"], labels["prompt"], strict=True))
        lists = sample_endpoint(
            prompts, base_url=endpoint, model=model, group_size=group_size, concurrency=concurrency
        )
        policy = f"endpoint:{model}"
    report = diagnose_labels(
        labels,
        catalog,
        policy=policy,
        ranks=ranks,
        group_size=group_size,
        seed=seed,
        rollouts=lists,
    )
    save_diagnostics(state.project.runs_dir, pipeline, report)
    if fmt is OutputFormat.table:
        metrics = report.drop("dataset", "split", "policy", "verdict")
        columns = [f"{d}/{s}" for d, s in report.select("dataset", "split").iter_rows()]
        transposed = metrics.transpose(
            include_header=True, header_name="metric", column_names=columns
        )
        _print_frame(transposed, fmt, title=f"Responder noise ({policy})")
        for row in report.iter_rows(named=True):
            console.print(f"[bold]{row['dataset']}/{row['split']}[/bold]: {row['verdict']}")
    else:
        _print_frame(report, fmt)


@app.command()
def publish(
    repo_id: Annotated[
        str, typer.Option("--repo-id", help="ORG/NAME of the Hub dataset repository.")
    ],
    pipelines: Annotated[
        list[str] | None, typer.Argument(help="Datasets to publish (default: all run).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Where to build the folder (default data/publish/NAME).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Build the folder, print its tree, stop.")
    ] = False,
    private: Annotated[
        bool, typer.Option("--private", help="Create the repository private.")
    ] = False,
) -> None:
    """Build the Hub repository folder (a config per dataset, card, statistics) and upload it."""
    from remark_data.publish.hub import build_repo_folder, check_repo_id, tree, upload

    check_repo_id(repo_id)
    names = pipelines or sorted(
        p.name for p in state.project.runs_dir.glob("*") if (p / "aggregate").exists()
    )
    target = out or state.project.data_dir / "publish" / repo_id.replace("/", "__")
    built = build_repo_folder(state.project, pipelines=names, out=target, repo_id=repo_id)
    console.print(f"built {built.folder}")
    if dry_run:
        console.print(tree(built.folder), markup=False, highlight=False)
        return
    commit = upload(built.folder, repo_id=repo_id, private=private)
    console.print("nothing changed: no commit" if commit is None else f"committed {commit}")


@schemas_app.command("export")
def schemas_export(
    out: Annotated[Path, typer.Option(help="Folder for the JSON Schema files.")] = Path("schemas"),
) -> None:
    """Write the JSON Schema of every table."""
    from remark_data.schemas import export_json_schemas

    target = out if out.is_absolute() else state.project.root / out
    for path in export_json_schemas(target):
        console.print(f"wrote {path}")


def _one_line(exc: RemarkError | OSError) -> str:
    if isinstance(exc, OSError) and exc.strerror:  # a full disk, a read-only folder, …
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def main() -> None:
    """Console entry point: user errors (and the machine's: a full disk, a read-only folder)
    become one line on stderr and exit code 2; ``--debug`` shows the chained traceback."""
    try:
        app()
    except (RemarkError, OSError) as exc:
        if state.debug:
            raise
        err_console.print(f"error: {_one_line(exc)}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
