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


def test_debug_shows_the_traceback(project) -> None:
    result = remark(project, "--debug", "run", "nope")
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_schemas_export(project, tmp_path) -> None:
    result = remark(project, "schemas", "export", "--out", str(tmp_path / "s"))
    assert result.returncode == 0
    assert {p.name for p in (tmp_path / "s").iterdir()} == {
        p.name for p in (REPO / "schemas").iterdir()
    }
