"""The `remark` command line: thin wrappers that parse arguments and call the library.

Every command parses its options, makes one call into the library (`reports`, `pipeline`,
`diagnose.report`, `publish.hub`, `database`, `schemas`) and renders what comes back with rich;
library progress reaches it through callbacks.
"""

# long-module: one typer command per user action; their option declarations alone take
# about half of the file, and each body is only parse → one library call → render.

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
    """Run pipelines: scrape → \\[extract] → ground → aggregate → stats."""
    from remark_data.pipeline import Event, run_pipelines
    from remark_data.runner import Progress

    current: list[str] = []

    def render(event: Event) -> None:
        if current[-1:] != [event.pipeline]:  # a header as each pipeline's first event arrives
            current.append(event.pipeline)
            console.print(f"[bold]{event.pipeline}[/bold]")
        if isinstance(event, Progress):
            err_console.print(f"  {event.stage}: {event.message}", markup=False)
        elif event.status == "skipped":
            console.print(f"  [dim]{event.stage}: skipped (inputs and config unchanged)[/dim]")
        else:
            rows = ", ".join(f"{t}={n:,}" for t, n in event.manifest.tables.items())
            console.print(f"  {event.stage}: ran in {event.manifest.compute_seconds:.2f}s ({rows})")

    run_pipelines(
        state.project,
        pipelines,
        stages=tuple(stage) if stage else None,
        force=force,
        verify=verify,
        on_event=render,
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
    from remark_data.reports import label_statistics

    table = fmt is OutputFormat.table
    report = label_statistics(
        state.project, pipelines, grounding=table, plots=plots, notify=err_console.print
    )
    _print_frame(report.summary() if table else report.stats, fmt, title="ReMaRk label statistics")
    if report.grounding is not None:
        _print_frame(
            report.grounding, fmt, title="Grounding of mentions (unmatched and ambiguous are kept)"
        )


@app.command(name="eval")
def evaluate(
    pipeline: Annotated[str, typer.Argument(help="The pipeline whose latest run is scored.")],
    gold: Annotated[
        Path, typer.Option(help="Gold JSONL: one object per comment (format in the README).")
    ],
    draws: Annotated[int, typer.Option(min=100, help="Bootstrap draws over threads.")] = 1000,
    fmt: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.table,
) -> None:
    """Precision and recall of a run against hand-labelled comments, at label, comment and
    mention level, with 95% bootstrap intervals over threads."""
    from remark_data.evaluate.run import evaluate_run

    report = evaluate_run(state.project, pipeline, gold=gold, draws=draws)
    if fmt is OutputFormat.table:
        report = report.drop("dataset").with_columns(pl.selectors.float().round(3))
    _print_frame(report, fmt, title=f"{pipeline} against {gold.name}")


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


class TrainerName(StrEnum):  # the choices of `remark_data.adapters.export.TRAINERS`
    trl = "trl"
    verl = "verl"
    openrlhf = "openrlhf"
    rank_grpo = "rank_grpo"


@app.command()
def export(
    pipeline: Annotated[str, typer.Argument(help="A pipeline that has been run.")],
    trainer: Annotated[TrainerName, typer.Option(help="Target trainer format.")],
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default data/exports/<pipeline>/<trainer>).")
    ] = None,
) -> None:
    """Write a pipeline's labels in a trainer's format, one file or folder per split."""
    from remark_data.adapters.export import check_trainer
    from remark_data.reports import export_pipeline

    trainer_name = check_trainer(trainer.value)
    for path in export_pipeline(state.project, pipeline, trainer=trainer_name, out=out):
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
    from remark_data.diagnose.report import choose_policy, run_diagnosis

    policy = choose_policy(
        rollouts=rollouts,
        endpoint=endpoint,
        model=model,
        popularity=popularity,
        protoqa_predictions=protoqa_predictions,
        concurrency=concurrency,
    )
    report = run_diagnosis(
        state.project,
        pipeline,
        policy=policy,
        group_size=group_size,
        ranks=ranks,
        split=split,
        limit=limit,
        seed=seed,
    )
    if fmt is not OutputFormat.table:
        _print_frame(report.frame, fmt)
        return
    _print_frame(report.metrics(), fmt, title=f"Responder noise ({report.policy})")
    for where, verdict in report.verdicts():
        console.print(f"[bold]{where}[/bold]: {verdict}")


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
    from remark_data.publish.hub import publish_pipelines

    done = publish_pipelines(
        state.project,
        repo_id=repo_id,
        pipelines=pipelines,
        out=out,
        dry_run=dry_run,
        private=private,
        notify=console.print,
    )
    if done.listing is not None:
        console.print(done.listing, markup=False, highlight=False)
    elif done.uploaded:
        console.print(
            "nothing changed: no commit" if done.commit is None else f"committed {done.commit}"
        )


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
