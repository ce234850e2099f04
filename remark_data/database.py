"""The DuckDB database: every table of every pipeline run as a view.

Views read the parquet files through the stage symlinks, so they always show the latest
committed version. For each table there is ``<pipeline>__<table>`` and a ``<table>`` view that
unions all pipelines (the tables share one schema).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import polars as pl

from remark_data.config import Project
from remark_data.diagnose.saved import diagnostics_paths
from remark_data.errors import RemarkError
from remark_data.pipeline import TABLE_STAGES
from remark_data.runner import RunFolder


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def refresh_database(project: Project) -> dict[str, int]:
    """(Re)create the views in ``data/remark.duckdb``; returns view name -> row count."""
    by_table: dict[str, list[tuple[str, list[Path]]]] = {}
    if project.runs_dir.is_dir():
        for run_dir in sorted(p for p in project.runs_dir.iterdir() if p.is_dir()):
            for table, paths in RunFolder(run_dir).committed_tables(TABLE_STAGES).items():
                by_table.setdefault(table, []).append((run_dir.name, paths))
    project.data_dir.mkdir(parents=True, exist_ok=True)
    tmp = project.database_path.with_name(f".{project.database_path.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    counts: dict[str, int] = {}
    with duckdb.connect(str(tmp)) as con:
        for table, runs in sorted(by_table.items()):
            for pipeline, paths in runs:
                view = f"{pipeline}__{table}"
                files = ", ".join(_literal(p) for p in paths)
                con.execute(f"CREATE VIEW {_quote(view)} AS SELECT * FROM read_parquet([{files}])")
                counts[view] = con.execute(f"SELECT count(*) FROM {_quote(view)}").fetchone()[0]  # type: ignore[index]
            union = " UNION ALL BY NAME ".join(
                f"SELECT * FROM {_quote(f'{p}__{table}')}" for p, _ in runs
            )
            con.execute(f"CREATE VIEW {_quote(table)} AS {union}")
            counts[table] = con.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()[0]  # type: ignore[index]
        reports = diagnostics_paths(project.runs_dir)
        if reports:  # `remark diagnose` reports, as one view
            files = ", ".join(_literal(p) for p in reports)
            con.execute(
                "CREATE VIEW diagnostics AS SELECT * FROM "
                f"read_parquet([{files}], union_by_name = true)"
            )
            counts["diagnostics"] = con.execute("SELECT count(*) FROM diagnostics").fetchone()[0]  # type: ignore[index]
    tmp.replace(project.database_path)
    return counts


#: Statement kinds `query` runs: reading only. COPY, ATTACH, SET, INSTALL, PRAGMA, CREATE …
#: are refused before DuckDB sees them.
_READ_STATEMENTS = (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN)


def _sandboxed_connection(project: Project) -> duckdb.DuckDBPyConnection:
    """A read-only connection that reads files under ``data/runs`` only (what the views read),
    loads no extension and whose settings cannot be changed by the query."""
    con = duckdb.connect(
        str(project.database_path),
        read_only=True,
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    # Order matters: the allowed folder must be set before external access is switched off.
    con.execute("SET allowed_directories = ?", [[str(project.runs_dir.resolve())]])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def query(project: Project, sql: str) -> pl.DataFrame:
    """Run one read-only query against the project's views (refreshing them if there is no
    database yet). Anything but SELECT / EXPLAIN, files outside ``data/runs`` and extension
    loading are refused with a `RemarkError`.
    """
    if not project.database_path.exists():
        refresh_database(project)
    try:
        with _sandboxed_connection(project) as con:
            statements = con.extract_statements(sql)
            if len(statements) != 1:
                raise RemarkError(f"SQL error: give exactly one statement, got {len(statements)}")
            if statements[0].type not in _READ_STATEMENTS:
                kind = statements[0].type.name
                raise RemarkError(f"SQL error: only SELECT queries are allowed here, got {kind}")
            relation = con.sql(sql)
            return pl.DataFrame() if relation is None else relation.pl()
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0]
        raise RemarkError(f"SQL error: {message}") from exc
