"""Publishing: the repository folder round-trips through `datasets.load_dataset`, and the upload
goes to a local stand-in for the Hub (HF_ENDPOINT) in one commit, once."""

import os

import pyarrow.parquet as pq
import pytest
import yaml

from remark_data.errors import RemarkError
from remark_data.publish.hub import MARKER, build_repo_folder, check_repo_id
from tests.conftest import run_folder
from tests.hub_server import HubStandIn
from tests.test_cli import remark

TOKEN = "hf_test_token_never_written_0123456789"


@pytest.mark.parametrize("fixture", ["built_project", "reddit_project"])
def test_folder_round_trips_through_load_dataset(request, fixture, tmp_path) -> None:
    import datasets

    project = request.getfixturevalue(fixture)
    pipelines = sorted(p.name for p in project.runs_dir.iterdir() if (p / "aggregate").exists())
    out = tmp_path / "repo"
    built = build_repo_folder(project, pipelines=pipelines, out=out, repo_id="org/remark")
    card = (out / "README.md").read_text()
    meta = yaml.safe_load(card.split("---")[1])
    assert [c["config_name"] for c in meta["configs"]] == [*pipelines, "all"]
    for config, splits in built.configs.items():
        for split, rows in splits.items():
            loaded = datasets.load_dataset(
                str(out), config, split=split, cache_dir=str(tmp_path / "hf-cache")
            )
            assert loaded.num_rows == rows
            if config == "all":
                continue
            labels = run_folder(project, config).read("aggregate", "labels").filter(split=split)
            assert list(loaded["request_id"]) == labels["request_id"].to_list()
            assert list(loaded["n_responders"]) == labels["n_responders"].to_list()
            assert list(loaded["union_item_ids"]) == labels["union_item_ids"].to_list()
            assert list(loaded["responder_item_ids"]) == labels["responder_item_ids"].to_list()
            for path in (out / config).glob(f"{split}-*.parquet"):
                metadata = pq.ParquetFile(path).metadata
                assert metadata.num_row_groups == 1 or metadata.row_group(0).num_rows >= 100_000
    assert "CC-BY-4.0" in card or "protoqa" not in pipelines
    assert "research use only" in card and "sha256" in card


def _publish(project, out, hub_url, *extra):
    env = {**os.environ, "HF_ENDPOINT": hub_url, "HF_TOKEN": TOKEN, "HF_HUB_DISABLE_TELEMETRY": "1"}
    return remark(project, "publish", "--repo-id", "org/remark", "--out", str(out), *extra, env=env)


def test_upload_is_one_commit_once_and_never_writes_the_token(built_project, tmp_path) -> None:
    out = tmp_path / "repo"
    with HubStandIn() as hub:
        first = _publish(built_project, out, hub.url)
        assert first.returncode == 0, first.stderr
        assert len(hub.commits) == 1
        local = sorted(
            str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != MARKER
        )
        assert sorted(hub.commits[0]) == local
        assert {hub.files[name] == (out / name).read_bytes() for name in local} == {True}
        assert all(
            r["authorization"] == f"Bearer {TOKEN}" for r in hub.requests if r["authorization"]
        )
        second = _publish(built_project, out, hub.url)
        assert second.returncode == 0 and "nothing changed" in second.stdout
        assert len(hub.commits) == 1
    for path in [*out.rglob("*"), *built_project.data_dir.rglob("*")]:
        if path.is_file() and path.stat().st_size < 50_000_000:
            assert TOKEN.encode() not in path.read_bytes(), path


def test_failed_upload_is_one_line_and_keeps_the_folder(built_project, tmp_path) -> None:
    out = tmp_path / "repo"
    with HubStandIn(fail_commits=True) as hub:
        result = _publish(built_project, out, hub.url)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: upload to org/remark failed (HTTP 500)")
    assert len(result.stderr.strip().splitlines()) == 1
    assert (out / "README.md").is_file() and list(out.glob("*/train-*.parquet"))


def test_dry_run_prints_the_tree_and_uploads_nothing(built_project, tmp_path) -> None:
    with HubStandIn() as hub:
        result = _publish(built_project, tmp_path / "repo", hub.url, "--dry-run")
    assert result.returncode == 0 and "protoqa/train-00000-of-00001.parquet" in result.stdout
    assert hub.requests == []


def test_out_never_replaces_a_folder_it_did_not_build(built_project, tmp_path) -> None:
    """The probe: `--out data` erased every run; an unrelated folder lost its files."""
    for target in (built_project.data_dir, tmp_path / "mine"):
        target.mkdir(exist_ok=True)
        (target / "keep.txt").write_text("precious")
        before = sorted(p for p in target.rglob("*"))
        result = remark(
            built_project, "publish", "--repo-id", "org/r", "--out", str(target), "--dry-run"
        )
        assert result.returncode == 2, result.stderr
        assert "did not write" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert sorted(p for p in target.rglob("*")) == before
        assert (target / "keep.txt").read_text() == "precious"
    # `--out .` is the project root: refused the same way, no traceback.
    dot = remark(built_project, "publish", "--repo-id", "org/r", "--out", ".", "--dry-run")
    assert (
        dot.returncode == 2 and dot.stderr.startswith("error: ") and "Traceback" not in dot.stderr
    )


def test_out_replaces_its_own_earlier_build(built_project, tmp_path) -> None:
    out = tmp_path / "repo"
    build_repo_folder(built_project, pipelines=["reddit_v2"], out=out, repo_id="org/a")
    (out / "stale.parquet").write_text("left from before")
    build_repo_folder(built_project, pipelines=["protoqa"], out=out, repo_id="org/a")
    assert not (out / "stale.parquet").exists() and not (out / "reddit_v2").exists()
    assert (out / "protoqa").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["repo"]  # nothing left beside it


@pytest.mark.parametrize(
    "repo_id", ["org/name\n", "org/..", "../name", "org/na me", "örg/name", "org/name/x", "org/"]
)
def test_odd_repo_ids_are_refused(repo_id) -> None:
    with pytest.raises(RemarkError, match="--repo-id"):
        check_repo_id(repo_id)


def test_card_states_each_datasets_own_settings(built_project, tmp_path) -> None:
    """G and the year tolerance come from each dataset's spec, not from the card's text."""
    out = tmp_path / "repo"
    build_repo_folder(built_project, pipelines=["protoqa", "reddit_v2"], out=out, repo_id="o/r")
    card = (out / "README.md").read_text()
    assert "G = 8" not in card and "github.com/)" not in card
    for pipeline in ("protoqa", "reddit_v2"):
        ground = run_folder(built_project, pipeline).manifest("ground").config["ground"]
        assert f"{pipeline}: ±{ground['year_tolerance']}" in card
        group_size = run_folder(built_project, pipeline).read("stats", "stats")["group_size"][0]
        assert f"| {pipeline} | all |" in card or pipeline in card
        assert f"| {group_size} |" in card


def test_unreachable_hub_is_one_line(built_project, tmp_path) -> None:
    from tests.llm_servers import free_port

    result = _publish(built_project, tmp_path / "repo", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: upload to org/remark failed (ConnectError")
    assert len(result.stderr.strip().splitlines()) == 1


def test_card_prose_is_a_packaged_template(built_project, tmp_path) -> None:
    """The card's prose lives in `remark_data/publish/card.md`; every placeholder is filled."""
    from importlib import resources

    from remark_data.publish.card import card_template, render_card

    assert resources.files("remark_data.publish").joinpath("card.md").is_file()
    names = set(card_template().get_identifiers())
    assert {"repo_id", "configs_yaml", "stats_table", "source_rows"} <= names
    out = tmp_path / "repo"
    build_repo_folder(built_project, pipelines=["reddit_v2"], out=out, repo_id="o/r")
    card = (out / "README.md").read_text()
    assert "${" not in card and card.startswith("---\nlicense: other\n")
    assert "# r: ReMaRk labels for GRPO recommenders" in card
    stats = run_folder(built_project, "reddit_v2").read("stats", "stats")
    small = render_card(repo_id="o/x", configs={"reddit_v2": {"train": 40}}, stats=stats,
                        sources=[], year_tolerance={"reddit_v2": 2},
                        licenses={"reddit_v2": "research use"})  # fmt: skip
    assert "| `reddit_v2` | train (40) | research use |" in small
    assert "per dataset (reddit_v2: ±2 years)" in small and small.endswith("|---|---|---|\n\n")


def test_publish_is_one_library_call(built_project, tmp_path) -> None:
    from remark_data.publish.hub import publish_pipelines

    notes: list[str] = []
    done = publish_pipelines(built_project, repo_id="org/one", out=tmp_path / "one",
                             dry_run=True, notify=notes.append)  # fmt: skip
    assert notes == [f"built {done.built.folder}"] and not done.uploaded
    assert done.listing is not None and "reddit_v2/train-00000-of-00001.parquet" in done.listing
    assert list(done.built.configs) == ["protoqa", "reddit_v2", "all"]
