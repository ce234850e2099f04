import duckdb
import polars as pl
import pytest

from remark_data.errors import RemarkError
from remark_data.store import query, refresh_database
from tests.conftest import store


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
    expected = store(built_project, "protoqa").read("aggregate", "labels")["n_responders"].sum()
    got = query(built_project, "SELECT sum(n_responders) AS n FROM protoqa__labels")["n"].item()
    assert got == expected


def test_sql_is_read_only_and_errors_are_one_line(built_project) -> None:
    refresh_database(built_project)
    with pytest.raises(RemarkError, match=r"SQL error: .*read-only"):
        query(built_project, "CREATE TABLE t AS SELECT 1")
    with pytest.raises(RemarkError, match="SQL error") as info:
        query(built_project, "SELECT nope FROM labels")
    assert "\n" not in str(info.value)


def test_views_follow_the_latest_committed_version(built_project) -> None:
    refresh_database(built_project)
    with duckdb.connect(str(built_project.database_path), read_only=True) as con:
        frame = con.sql(
            "SELECT split, n_requests FROM stats WHERE dataset = 'protoqa' ORDER BY split"
        ).pl()
    assert frame.equals(
        pl.DataFrame({"split": ["all", "dev", "train"], "n_requests": [9814, 1032, 8782]})
    )


def test_views_hold_whole_tables_across_stages(reddit_project) -> None:
    """`mentions` = pre-extracted + extracted; `catalog` = the ground stage's full catalog."""
    counts = refresh_database(reddit_project)
    for pipeline in ("reddit_movies", "reddit_books", "reddit_music"):
        groundings = store(reddit_project, pipeline).read("ground", "groundings").height
        assert counts[f"{pipeline}__mentions"] == groundings
        catalog = store(reddit_project, pipeline).read("ground", "catalog").height
        assert counts[f"{pipeline}__catalog"] == catalog
    assert counts["reddit_movies__catalog"] == 15576
