import hashlib
import shutil

import pytest

from remark_data.config import Project
from remark_data.errors import RemarkError
from remark_data.sources import Fetcher, load_registry
from tests.conftest import CORPUS, REPO


def test_registry_checksums_match_the_mirror() -> None:
    registry = load_registry(REPO / "data" / "sources.toml")
    assert len(registry) >= 8
    for entry in registry.values():
        path = CORPUS / entry.mirror_path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256, entry.mirror_path


def test_mirror_fetch_verifies_and_mismatch_is_an_error(project, tmp_path) -> None:
    assert (
        Fetcher(project).fetch("protoqa-dev-crowdsourced")
        == CORPUS / "protoqa/dev.crowdsourced.jsonl"
    )
    mirror = tmp_path / "mirror"
    target = mirror / "protoqa" / "dev.crowdsourced.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(CORPUS / "protoqa/dev.crowdsourced.jsonl", target)
    with target.open("a") as handle:
        handle.write("\n")
    tampered = Project(root=project.root, mirror=mirror)
    with pytest.raises(RemarkError, match="checksum mismatch"):
        Fetcher(tampered).fetch("protoqa-dev-crowdsourced")
    with pytest.raises(RemarkError, match="not found in mirror"):
        Fetcher(tampered).fetch("protoqa-dev-scraped")
    with pytest.raises(RemarkError, match="unknown source id 'nope'"):
        Fetcher(tampered).fetch("nope")


def test_download_goes_to_the_cache_and_is_verified(project) -> None:
    # A file:// URL exercises the real download path without a network.
    registry = (project.root / "data" / "sources.toml").read_text()
    source = CORPUS / "protoqa" / "dev.scraped.jsonl"
    registry = registry.replace(
        "https://raw.githubusercontent.com/iesl/protoqa-data/c6c5696c/data/dev/dev.scraped.jsonl",
        source.as_uri(),
    )
    (project.root / "data" / "sources.toml").write_text(registry)
    online = Project(root=project.root, mirror=None)
    path = Fetcher(online).fetch("protoqa-dev-scraped")
    assert path.is_relative_to(project.root / "data" / "cache" / "sources")
    assert path.read_bytes() == source.read_bytes()
    with pytest.raises(RemarkError, match=r"download of .* failed"):
        Fetcher(online).fetch("protoqa-dev-crowdsourced")


def test_dataset_licenses_come_from_the_registry(built_project) -> None:
    """A new dataset needs no license written in code: its inputs' registry entries give it."""
    from remark_data.publish.hub import dataset_licenses

    assert dataset_licenses(built_project, ["protoqa", "reddit_v2"]) == {
        "protoqa": "CC-BY-4.0",
        "reddit_v2": "Reddit terms (research use only)",
    }
