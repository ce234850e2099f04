"""Shared fixtures: a throwaway project that reads the real corpus as its offline mirror."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from remark_data.config import Project, load_pipeline_spec
from remark_data.pipeline import PipelineRun
from remark_data.runner import RunFolder

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()
#: The `[catalog]` table of the movie pipelines, for specs written by tests.
MOVIES_CATALOG = """[catalog]
format = "movies_merged"
[catalog.files]
movielens_movies = "movielens-small-movies"
movielens_links = "movielens-small-links"
rank_grpo = "rank-grpo-gt-catalog"
reddit_movie_v1 = "reddit-movie-v1-entity2id"
"""
# WordNet and the MiniLM model for the answer matcher, installed by `make models`.
os.environ.setdefault("REMARK_MODELS_DIR", str(REPO / "data" / "cache" / "models"))


def make_project(root: Path) -> Project:
    """A project folder with the repository's specs and source registry, mirroring the corpus."""
    shutil.copytree(REPO / "pipelines", root / "pipelines")
    (root / "data").mkdir(parents=True)
    shutil.copy(REPO / "data" / "sources.toml", root / "data" / "sources.toml")
    return Project(root=root, mirror=CORPUS)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "project")


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Both foundation pipelines run once per session on the real corpus."""
    project = make_project(tmp_path_factory.mktemp("built") / "project")
    for name in ("protoqa", "reddit_v2"):
        spec = load_pipeline_spec(project.pipeline_path(name))
        PipelineRun(spec=spec, project=project).run()
    return project


def run_folder(project: Project, pipeline: str) -> RunFolder:
    return RunFolder(project.runs_dir / pipeline)


@pytest.fixture(scope="session")
def reddit_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The three Reddit pipelines run once per session on the real corpus."""
    project = make_project(tmp_path_factory.mktemp("reddit") / "project")
    for name in ("reddit_movies", "reddit_books", "reddit_music"):
        spec = load_pipeline_spec(project.pipeline_path(name))
        PipelineRun(spec=spec, project=project).run()
    return project
