"""Stage runner: skip when unchanged, --force, and crash safety under a real SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import time

import polars as pl

from remark_data.config import load_pipeline_spec
from remark_data.pipeline import PipelineRun
from tests.conftest import REPO, run_folder


def _run(project, **kwargs):
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    return {r.stage: r.status for r in PipelineRun(spec=spec, project=project, **kwargs).run()}


def test_rerun_skips_force_reruns_and_config_change_reruns_downstream(project) -> None:
    assert set(_run(project).values()) == {"ran"}
    assert set(_run(project).values()) == {"skipped"}
    assert set(_run(project, force=True).values()) == {"ran"}
    spec_path = project.pipeline_path("reddit_v2")
    spec_path.write_text(spec_path.read_text().replace("year_tolerance = 2", "year_tolerance = 1"))
    assert _run(project) == {
        "scrape": "skipped",
        "ground": "ran",
        "aggregate": "ran",
        "stats": "ran",
    }


def test_manifest_records_hashes_rows_timings_and_version(project) -> None:
    _run(project)
    manifest = run_folder(project, "reddit_v2").manifest("scrape")
    assert manifest.tables["requests"] == 40 and manifest.tables["responses"] == 100
    assert manifest.inputs["sft-train-sample100.rows"].sha256.startswith("d3fb1d34")
    assert manifest.package_version and manifest.compute_seconds >= 0
    assert len(manifest.config_hash) == 64
    labels_dir = run_folder(project, "reddit_v2").stage_dir("aggregate")
    assert json.loads((labels_dir / "manifest.json").read_text())["upstream"].keys() == {
        "scrape",
        "ground",
    }


def test_changed_input_file_reruns(project, tmp_path) -> None:
    rows = tmp_path / "rows.json"
    rows.write_text(
        (
            REPO / ".." / "shared" / "corpus" / "rank_grpo" / "reddit_v2_sft_train_sample100.json"
        ).read_text()
    )
    spec_path = project.pipeline_path("reddit_v2")
    spec_path.write_text(
        spec_path.read_text().replace(
            'files = { rows = "rank-grpo-reddit-v2-sample100" }', f'paths = {{ rows = "{rows}" }}'
        )
    )
    _run(project)
    assert set(_run(project).values()) == {"skipped"}
    data = json.loads(rows.read_text())
    data["samples"] = data["samples"][:50]
    rows.write_text(json.dumps(data))
    assert _run(project)["scrape"] == "ran"
    assert run_folder(project, "reddit_v2").read("scrape", "responses").height == 50


KILLER = """
import sys, time
from pathlib import Path
import remark_data.runner as runner
marker, project_dir, mirror = sys.argv[1:4]
original = runner.RunFolder.commit
def slow_commit(self, *, stage, output, manifest):
    if stage == "aggregate":
        # Write part of the new version, announce it, then hang until killed.
        self.versions.mkdir(parents=True, exist_ok=True)
        tmp = self.versions / "aggregate.tmp-killed"
        tmp.mkdir(exist_ok=True)
        output.tables["labels"].head(3).write_parquet(tmp / "labels.parquet")
        Path(marker).write_text("writing")
        time.sleep(600)
    return original(self, stage=stage, output=output, manifest=manifest)
runner.RunFolder.commit = slow_commit
from remark_data.cli import main
sys.argv = ["remark", "--project-dir", project_dir, "--mirror", mirror,
            "run", "reddit_v2", "--force"]
main()
"""


def test_sigkill_mid_stage_keeps_previous_outputs(project, tmp_path) -> None:
    _run(project)
    folder = run_folder(project, "reddit_v2")
    before = folder.read("aggregate", "labels")
    before_manifest = folder.manifest("aggregate")
    marker = tmp_path / "marker"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLER, str(marker), str(project.root), str(project.mirror)],
        cwd=REPO,
    )
    deadline = time.time() + 60
    while not marker.exists():
        assert proc.poll() is None, "runner exited before reaching the commit"
        assert time.time() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # The visible stage is the previous complete version, untouched.
    assert folder.manifest("aggregate") == before_manifest
    assert folder.read("aggregate", "labels").equals(before)
    assert sorted(p.name for p in folder.stage_dir("aggregate").iterdir()) == [
        "labels.parquet",
        "manifest.json",
    ]
    assert any(p.name.startswith("aggregate.tmp-") for p in folder.versions.iterdir())
    # The next run cleans the leftover and commits normally.
    assert _run(project, force=True)["aggregate"] == "ran"
    assert not any(".tmp-" in p.name for p in folder.versions.iterdir())
    assert folder.read("aggregate", "labels").height == 40
    assert pl.read_parquet(folder.table_path("aggregate", "labels")).height == 40


def _copy_package(tmp_path):
    """A copy of the package to edit; subprocesses import it first (PYTHONPATH)."""
    import shutil

    root = tmp_path / "code"
    shutil.copytree(REPO / "remark_data", root / "remark_data")
    return root


RUN = """
import json, sys
from pathlib import Path
from remark_data.config import Project, load_pipeline_spec
from remark_data.pipeline import PipelineRun
import remark_data
assert remark_data.__file__.startswith(sys.argv[3]), remark_data.__file__
project = Project(root=Path(sys.argv[1]), mirror=Path(sys.argv[2]))
spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
print(json.dumps({r.stage: r.status for r in PipelineRun(spec=spec, project=project).run()}))
"""


def _run_with(code_root, project):
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(project.root), str(project.mirror), str(code_root)],
        capture_output=True,
        text=True,
        env=env,
        cwd=code_root,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_code_change_reruns_exactly_the_stages_it_affects(project, tmp_path) -> None:
    code = _copy_package(tmp_path)
    assert set(_run_with(code, project).values()) == {"ran"}
    # A comment changes no behaviour: nothing re-runs.
    stats_py = code / "remark_data" / "stages" / "stats.py"
    stats_py.write_text(stats_py.read_text() + "\n# a comment only\n")
    assert set(_run_with(code, project).values()) == {"skipped"}
    # The statistics' code: only stats re-runs.
    stats_py.write_text(stats_py.read_text() + "\n_EDITED = True\n")
    assert _run_with(code, project) == {
        "scrape": "skipped",
        "ground": "skipped",
        "aggregate": "skipped",
        "stats": "ran",
    }
    # The grounding code: ground re-runs, and the stages that read its tables.

    grounding_py = code / "remark_data" / "stages" / "ground" / "grounding.py"
    grounding_py.write_text(grounding_py.read_text() + "\n_EDITED = True\n")
    assert _run_with(code, project) == {
        "scrape": "skipped",
        "ground": "ran",
        "aggregate": "ran",
        "stats": "ran",
    }
    # Another format's reader: nothing of reddit_v2 re-runs.
    other = code / "remark_data" / "stages" / "scrape" / "musicrs.py"
    other.write_text(other.read_text() + "\n_EDITED = True\n")
    assert set(_run_with(code, project).values()) == {"skipped"}


def test_empty_stage_list_runs_nothing(project) -> None:
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    assert PipelineRun(spec=spec, project=project).run(stages=()) == []
    assert not (project.runs_dir / "reddit_v2" / "scrape").exists()


def test_a_second_run_fails_with_one_line_naming_the_holder(project) -> None:
    from tests.test_cli import remark

    folder = run_folder(project, "reddit_v2")
    with folder.lock():
        blocked = remark(project, "run", "reddit_v2")
    assert blocked.returncode == 2
    assert blocked.stderr.startswith("error: reddit_v2: another run holds")
    assert f"pid {os.getpid()}" in blocked.stderr
    assert len(blocked.stderr.strip().splitlines()) == 1
    assert not (project.runs_dir / "reddit_v2" / "scrape").exists()
    # Released on exit: the next run goes ahead.
    assert remark(project, "run", "reddit_v2").returncode == 0


def test_concurrent_forced_runs_never_break_the_store(project) -> None:
    """The probe: two `run --force` at once died with tracebacks and left dangling links."""
    from tests.test_cli import remark

    _run(project)
    for _ in range(3):
        args = [
            sys.executable,
            "-c",
            "from remark_data.cli import main; main()",
            "--project-dir",
            str(project.root),
            "--mirror",
            str(project.mirror),
            "run",
            "reddit_v2",
            "--force",
        ]
        procs = [
            subprocess.Popen(args, cwd=REPO, stderr=subprocess.PIPE, text=True) for _ in range(2)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert "Traceback" not in err
            assert proc.returncode == 0 or err.startswith("error: reddit_v2: another run holds")
        folder = run_folder(project, "reddit_v2")
        for stage in ("scrape", "ground", "aggregate", "stats"):
            assert folder.stage_dir(stage).resolve().is_dir(), stage
        assert folder.read("aggregate", "labels").height == 40
    assert remark(project, "db").returncode == 0


def test_leftovers_are_removed_when_any_run_starts(project) -> None:
    _run(project)
    folder = run_folder(project, "reddit_v2")
    (folder.versions / "aggregate.tmp-123-dead").mkdir()
    (folder.versions / "stats-0123456789abcdef-orphan").mkdir()
    (folder.root / ".ground.tmp-deadbeef").symlink_to("nowhere")
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    PipelineRun(spec=spec, project=project).run(stages=("scrape",))
    names = {p.name for p in folder.versions.iterdir()}
    assert "aggregate.tmp-123-dead" not in names and "stats-0123456789abcdef-orphan" not in names
    assert not (folder.root / ".ground.tmp-deadbeef").is_symlink()
    assert len(names) == 4  # one version per stage, each still linked
    assert folder.read("aggregate", "labels").height == 40


def test_in_place_edit_with_size_and_mtime_kept_is_caught(project, tmp_path) -> None:
    """The probe: the sha256 memo (size + mtime) let an edited source through unnoticed."""
    source = REPO / ".." / "shared" / "corpus" / "rank_grpo" / "reddit_v2_sft_train_sample100.json"
    rows = tmp_path / "rows.json"
    rows.write_bytes(source.read_bytes())
    spec_path = project.pipeline_path("reddit_v2")
    spec_path.write_text(
        spec_path.read_text().replace(
            'files = { rows = "rank-grpo-reddit-v2-sample100" }', f'paths = {{ rows = "{rows}" }}'
        )
    )
    _run(project)
    stat = rows.stat()
    data = bytearray(rows.read_bytes())
    # Same length, different prompt text of the first row; then the old mtime put back.
    at = data.index(b"movie")
    data[at : at + 5] = b"MOVIE"
    rows.write_bytes(bytes(data))
    os.utime(rows, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert rows.stat().st_size == stat.st_size and rows.stat().st_mtime_ns == stat.st_mtime_ns
    assert _run(project)["scrape"] == "ran"


def test_verify_rehashes_every_input(project) -> None:
    from remark_data.sources import HashCache

    _run(project)
    cache_path = project.data_dir / "cache" / "sha256.json"
    cache = HashCache(cache_path)
    # A poisoned memo entry is believed without --verify and ignored with it.
    for entry in cache.entries.values():
        entry["sha256"] = "0" * 64
    cache._saved = ""
    cache.save()
    spec = load_pipeline_spec(project.pipeline_path("reddit_v2"))
    run = PipelineRun(spec=spec, project=project, verify=True)
    assert {r.status for r in run.run()} == {"skipped"}
    assert "0" * 64 not in cache_path.read_text()


def test_unchanged_run_writes_nothing(project) -> None:
    """A run with nothing to do must work on a read-only `data/`: it writes no file."""
    _run(project)
    before = {p: p.stat().st_mtime_ns for p in project.data_dir.rglob("*") if p.is_file()}
    assert set(_run(project).values()) == {"skipped"}
    after = {p: p.stat().st_mtime_ns for p in project.data_dir.rglob("*") if p.is_file()}
    changed = [p.name for p in before if after.get(p) != before[p]]
    assert changed in ([], [".lock"])


def test_stage_names_literal_lists_the_registered_stages_in_order() -> None:
    import typing

    from remark_data.pipeline import STAGE_NAMES
    from remark_data.schemas import StageName

    assert typing.get_args(StageName) == STAGE_NAMES
