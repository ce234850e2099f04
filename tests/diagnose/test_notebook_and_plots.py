"""The analysis notebook runs top to bottom on the real corpus; the PNG figures are real images."""

import struct

import nbformat
import pytest
from nbclient import NotebookClient

from remark_data.database import refresh_database
from remark_data.diagnose.rollouts import diagnose_labels
from remark_data.diagnose.saved import save_diagnostics
from tests.conftest import REPO, run_folder
from tests.test_cli import remark


@pytest.fixture(scope="module")
def with_diagnostics(built_project):
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    report = diagnose_labels(labels, policy="popularity", group_size=8, ranks=20)
    save_diagnostics(built_project.runs_dir, "reddit_v2", report)
    refresh_database(built_project)
    return built_project


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_notebook_executes_and_draws_its_figures(with_diagnostics, monkeypatch) -> None:
    monkeypatch.setenv("REMARK_DB", str(with_diagnostics.database_path))
    notebook = nbformat.read(REPO / "notebooks" / "responder_noise.ipynb", as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(REPO / "notebooks")}},
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 5  # responders, p̂, agreement, diagnostics, popularity bias


def test_stats_plots_writes_real_pngs(with_diagnostics, tmp_path) -> None:
    result = remark(with_diagnostics, "stats", "--plots", str(tmp_path / "figures"))
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert names == [
        "diagnostics.png",
        "label_noise.png",
        "p_hat_distribution.png",
        "popularity_bias.png",
        "responders_per_request.png",
    ]
    for path in (tmp_path / "figures").iterdir():
        width, height = _png_size(path)
        assert width >= 600 and height >= 300 and path.stat().st_size > 10_000
