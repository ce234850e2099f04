"""The DuckDB database: every table of every pipeline run as a view.

Views read the parquet files through the stage symlinks, so they always show the latest
committed version. For each table there is ``<pipeline>__<table>`` and a ``<table>`` view that
unions all pipelines (the tables share one schema); ``provenance`` shows, for every grounded
mention, the comment text that produced it.
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


#: Every grounded mention with the text that produced it: the comment, the span of the surface
#: there (`text_at_span` equals `surface`) and 80 characters around it. Seen mentions point into
#: the request prompt.
PROVENANCE_VIEW = """
CREATE VIEW provenance AS
WITH located AS (
    SELECT g.dataset, g.request_id, g.item_id, g.status, g.reason, g.role, g.stance,
           g.response_id, g.responder_index, m.mention_id, m.comment_id, m.surface, m.extractor,
           m.span_start, m.span_end,
           coalesce(r.text, q.prompt) AS source_text,
           coalesce(r.comment_starts[list_position(r.comment_ids, m.comment_id)], 0)
               + m.span_start AS span_at
    FROM groundings g
    JOIN mentions m USING (dataset, mention_id)
    LEFT JOIN responses r ON r.dataset = g.dataset AND r.response_id = g.response_id
    LEFT JOIN requests q ON g.response_id IS NULL AND q.dataset = g.dataset
                         AND q.request_id = g.request_id
)
SELECT * EXCLUDE (source_text, span_at),
       substr(source_text, span_at + 1, span_end - span_start) AS text_at_span,
       substr(source_text, greatest(span_at - 80, 0) + 1,
              least(span_at, 80) + span_end - span_start + 80) AS context
FROM located
"""


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
        if {"groundings", "mentions", "responses", "requests"} <= by_table.keys():
            con.execute(PROVENANCE_VIEW)
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
