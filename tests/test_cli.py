"""The CLI end to end in subprocesses: output, exit codes and one-line errors."""

import json
import subprocess
import sys

from tests.conftest import REPO


def remark(project, *args, env=None):
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from remark_data.cli import main; main()",
            "--project-dir",
            str(project.root),
            "--mirror",
            str(project.mirror),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )


def test_run_stats_db_sql(project) -> None:
    first = remark(project, "run", "reddit_v2")
    assert first.returncode == 0, first.stderr
    assert "aggregate: ran" in first.stdout
    again = remark(project, "run", "reddit_v2", "--stage", "scrape")
    assert "scrape: skipped (inputs and config unchanged)" in again.stdout
    stats = remark(project, "stats", "--format", "json")
    rows = json.loads(stats.stdout)
    assert rows[0]["dataset"] == "reddit_v2" and rows[0]["n_requests"] == 40
    assert rows[0]["single_responder_share"] == 24 / 40
    table = remark(project, "stats")
    assert "reddit_v2" in table.stdout and "1.512 @G=8" in table.stdout
    assert (project.runs_dir / "reddit_v2" / "stats" / "stats.json").is_file()
    assert remark(project, "db").returncode == 0
    csv = remark(project, "sql", "SELECT count(*) AS n FROM labels", "--format", "csv")
    assert csv.stdout.splitlines() == ["n", "40"]


def test_user_errors_are_one_line_with_nonzero_exit(project) -> None:
    cases = [
        (("run", "nope"), "error: "),
        (("run", "reddit_v2", "--stage", "bogus"), "unknown stage 'bogus'"),
        (("stats", "reddit_v2"), "no statistics yet"),
        (("sql", "SELECT * FROM nowhere"), "SQL error"),
    ]
    for args, message in cases:
        result = remark(project, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


def test_debug_shows_the_traceback_and_its_cause(project) -> None:
    result = remark(project, "--debug", "run", "nope")
    assert result.returncode != 0 and "Traceback" in result.stderr
    # The chained cause is kept, not dropped by `from None`.
    assert "FileNotFoundError" in result.stderr
    assert "The above exception was the direct cause" in result.stderr


def test_bad_spec_files_are_one_line(project) -> None:
    (project.root / "pipelines" / "latin1.toml").write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    (project.root / "pipelines" / "folder.toml").mkdir()
    for name, message in (("latin1", "not UTF-8"), ("folder", "is a folder")):
        result = remark(project, "run", name)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_unknown_name_stops_before_anything_runs(project) -> None:
    result = remark(project, "run", "reddit_v2", "nonexistent")
    assert result.returncode == 2 and "nonexistent" in result.stderr
    assert not (project.runs_dir / "reddit_v2").exists()


def test_stats_without_names_leaves_out_partial_runs(project) -> None:
    assert remark(project, "run", "reddit_v2").returncode == 0
    assert remark(project, "run", "protoqa", "--stage", "scrape").returncode == 0
    result = remark(project, "stats", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert [row["dataset"] for row in json.loads(result.stdout)] == ["reddit_v2"]
    assert "left out (not run up to stats yet): protoqa" in result.stderr


DISK_FULL = """
import errno, os, sys
import polars as pl
def full(self, path, *args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
pl.DataFrame.write_parquet = full
from remark_data.cli import main
sys.argv = ["remark", "--project-dir", sys.argv[1], "--mirror", sys.argv[2], *sys.argv[3:]]
main()
"""


def test_a_full_disk_is_one_line_and_keeps_what_was_done(project) -> None:
    assert remark(project, "run", "reddit_v2").returncode == 0
    labels = project.runs_dir / "reddit_v2" / "aggregate" / "labels.parquet"
    before = labels.read_bytes()
    args = [str(project.root), str(project.mirror), "run", "reddit_v2", "--force"]
    result = subprocess.run(
        [sys.executable, "-c", DISK_FULL, *args], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: No space left on device: ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert labels.read_bytes() == before
    assert not [p for p in (labels.parents[1] / ".versions").iterdir() if ".tmp-" in p.name]


def test_schemas_export(project, tmp_path) -> None:
    result = remark(project, "schemas", "export", "--out", str(tmp_path / "s"))
    assert result.returncode == 0
    assert {p.name for p in (tmp_path / "s").iterdir()} == {
        p.name for p in (REPO / "schemas").iterdir()
    }


def test_commands_call_the_library_once(built_project, tmp_path) -> None:
    """`stats` and `export` are one call each into `remark_data.reports`."""
    from remark_data.adapters.export import TRAINERS
    from remark_data.cli import TrainerName
    from remark_data.reports import export_pipeline, label_statistics
    from remark_data.schemas import GROUNDING_STATUSES

    assert tuple(t.value for t in TrainerName) == TRAINERS
    notes: list[str] = []
    report = label_statistics(built_project, grounding=True, notify=notes.append)
    assert report.pipelines == ["protoqa", "reddit_v2"] and notes == []
    assert report.summary().columns[:4] == ["dataset", "split", "requests", "responders"]
    assert report.grounding is not None
    statuses = report.grounding.columns[2:]
    assert statuses == [s for s in GROUNDING_STATUSES if s in statuses]
    written = export_pipeline(built_project, "reddit_v2", trainer="verl", out=tmp_path / "v")
    assert written == [tmp_path / "v" / "train.parquet"]
