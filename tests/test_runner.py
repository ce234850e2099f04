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
from tests.conftest import REPO, store


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
    manifest = store(project, "reddit_v2").manifest("scrape")
    assert manifest["tables"]["requests"] == 40 and manifest["tables"]["responses"] == 100
    assert manifest["inputs"]["sft-train-sample100.rows"]["sha256"].startswith("d3fb1d34")
    assert manifest["package_version"] and manifest["compute_seconds"] >= 0
    assert len(manifest["config_hash"]) == 64
    labels_dir = store(project, "reddit_v2").stage_dir("aggregate")
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
    assert store(project, "reddit_v2").read("scrape", "responses").height == 50


KILLER = """
import sys, time
from pathlib import Path
import remark_data.runner as runner
marker, project_dir, mirror = sys.argv[1:4]
original = runner.RunStore.commit
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
runner.RunStore.commit = slow_commit
from remark_data.cli import main
sys.argv = ["remark", "--project-dir", project_dir, "--mirror", mirror,
            "run", "reddit_v2", "--force"]
main()
"""


def test_sigkill_mid_stage_keeps_previous_outputs(project, tmp_path) -> None:
    _run(project)
    run_store = store(project, "reddit_v2")
    before = run_store.read("aggregate", "labels")
    before_manifest = run_store.manifest("aggregate")
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
    assert run_store.manifest("aggregate") == before_manifest
    assert run_store.read("aggregate", "labels").equals(before)
    assert sorted(p.name for p in run_store.stage_dir("aggregate").iterdir()) == [
        "labels.parquet",
        "manifest.json",
    ]
    assert any(p.name.startswith("aggregate.tmp-") for p in run_store.versions.iterdir())
    # The next run cleans the leftover and commits normally.
    assert _run(project, force=True)["aggregate"] == "ran"
    assert not any(".tmp-" in p.name for p in run_store.versions.iterdir())
    assert run_store.read("aggregate", "labels").height == 40
    assert pl.read_parquet(run_store.table_path("aggregate", "labels")).height == 40
