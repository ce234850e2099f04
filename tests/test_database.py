import polars as pl
import pytest

from remark_data.config import load_pipeline_spec
from remark_data.database import query, refresh_database
from remark_data.errors import RemarkError
from remark_data.pipeline import PipelineRun
from tests.conftest import run_folder


def test_every_table_of_every_run_is_a_view(built_project) -> None:
    counts = refresh_database(built_project)
    for pipeline in ("protoqa", "reddit_v2"):
        for table in (
            "requests",
            "responses",
            "mentions",
            "groundings",
            "catalog",
            "labels",
            "stats",
        ):
            view = f"{pipeline}__{table}"
            assert view in counts, view
    assert counts["reddit_v2__labels"] == 40
    assert counts["labels"] == counts["protoqa__labels"] + 40
    expected = (
        run_folder(built_project, "protoqa").read("aggregate", "labels")["n_responders"].sum()
    )
    got = query(built_project, "SELECT sum(n_responders) AS n FROM protoqa__labels")["n"].item()
    assert got == expected


def test_sql_errors_are_one_line(built_project) -> None:
    refresh_database(built_project)
    with pytest.raises(RemarkError, match="SQL error") as info:
        query(built_project, "SELECT nope FROM labels")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t AS SELECT 1",
        "COPY (SELECT 'x' AS x) TO '{labels}' (FORMAT parquet)",
        "ATTACH '{root}/other.duckdb' AS other (READ_WRITE)",
        "SET threads = 1",
        "INSTALL httpfs",
        "PRAGMA version",
        "SELECT 1; DROP VIEW labels",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM glob('/root/*')",
        "SELECT * FROM read_csv('{root}/data/sources.toml')",
    ],
)
def test_sql_cannot_write_or_read_outside_the_runs(project, sql) -> None:
    """The probe's escapes: each is refused, and the committed labels stay as they were."""
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    PipelineRun(spec=spec, project=project).run()
    folder = run_folder(project, "reddit_v2")
    labels_path = folder.table_path("aggregate", "labels")
    before = labels_path.read_bytes()
    refresh_database(project)
    with pytest.raises(RemarkError, match="SQL error"):
        query(project, sql.format(labels=labels_path, root=project.root))
    assert labels_path.read_bytes() == before
    assert not (project.root / "other.duckdb").exists()
    assert query(project, "SELECT count(*) AS n FROM labels")["n"].item() == 40


def test_views_follow_the_latest_committed_version(project) -> None:
    spec_path = project.pipeline_path("reddit_v2")
    PipelineRun(spec=load_pipeline_spec(spec_path), project=project).run()
    refresh_database(project)
    sql = "SELECT group_size, prop2_bound FROM stats WHERE dataset = 'reddit_v2'"
    first = query(project, sql)
    assert set(first["group_size"]) == {8}
    # A second committed version (G = 4) replaces the first behind the same views, with no
    # refresh of the database in between.
    spec_path.write_text(spec_path.read_text().replace("group_size = 8", "group_size = 4"))
    results = PipelineRun(spec=load_pipeline_spec(spec_path), project=project).run()
    assert {r.stage: r.status for r in results}["stats"] == "ran"
    second = query(project, sql)
    assert set(second["group_size"]) == {4}
    assert second["prop2_bound"].to_list() != first["prop2_bound"].to_list()
    expected = run_folder(project, "reddit_v2").read("stats", "stats")
    assert second["prop2_bound"].to_list() == expected["prop2_bound"].to_list()


def test_db_counts_diagnostics_rows_not_files(project) -> None:
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    PipelineRun(spec=spec, project=project).run()
    reports = project.runs_dir / "reddit_v2" / "diagnostics"
    reports.mkdir()
    pl.DataFrame({"dataset": ["reddit_v2"] * 3, "split": ["a", "b", "c"]}).write_parquet(
        reports / "one.parquet"
    )
    counts = refresh_database(project)
    assert counts["diagnostics"] == 3


def test_views_hold_whole_tables_across_stages(reddit_project) -> None:
    """`mentions` = pre-extracted + extracted; `catalog` = the ground stage's full catalog."""
    counts = refresh_database(reddit_project)
    for pipeline in ("reddit_movies", "reddit_books", "reddit_music"):
        groundings = run_folder(reddit_project, pipeline).read("ground", "groundings").height
        assert counts[f"{pipeline}__mentions"] == groundings
        catalog = run_folder(reddit_project, pipeline).read("ground", "catalog").height
        assert counts[f"{pipeline}__catalog"] == catalog
    assert counts["reddit_movies__catalog"] == 15486  # 15556 listed, 70 near-duplicates folded
