"""What a stage sees while it runs: its spec, the tables of earlier stages, resolved input
files, the global catalog (loaded once per run) and a progress callback."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec, Project
from remark_data.runner.folder import RunFolder
from remark_data.sources import Fetcher


@dataclass(kw_only=True)
class RunResources:
    """Shared by every stage of one run: the fetcher (with its hash memo) and the global catalog,
    so a run loads it at most once."""

    spec: PipelineSpec
    project: Project
    fetcher: Fetcher
    _catalog: pl.DataFrame | None = field(default=None, init=False)
    _catalog_loaded: bool = field(default=False, init=False)

    def source_files(self) -> dict[str, dict[str, Path]]:
        """source name -> role -> verified local path."""
        return {
            s.name: self.fetcher.resolve(files=s.files, paths=s.paths) for s in self.spec.sources
        }

    def catalog_files(self) -> dict[str, Path]:
        catalog = self.spec.catalog
        return self.fetcher.resolve(files=catalog.files, paths=catalog.paths)

    def catalog(self) -> pl.DataFrame | None:
        """The spec's global catalog (conformed), or None when the spec has none."""
        if not self._catalog_loaded:
            from remark_data.schemas import conform
            from remark_data.stages.ground.catalogs import load_catalog

            loaded = load_catalog(self.spec.catalog, self.catalog_files(), dataset=self.spec.name)
            self._catalog = None if loaded is None else conform(loaded, "catalog")
            self._catalog_loaded = True
        return self._catalog


@dataclass(frozen=True, kw_only=True)
class StageContext:
    """One stage's view of the run."""

    stage: str
    resources: RunResources
    folder: RunFolder
    #: table -> the earlier, enabled stages that write it (in pipeline order)
    writers: Mapping[str, Sequence[str]]
    progress: Callable[[str], None] = lambda message: None

    @property
    def spec(self) -> PipelineSpec:
        return self.resources.spec

    @property
    def project(self) -> Project:
        return self.resources.project

    def read(self, table: str) -> pl.DataFrame:
        """`table` as the earlier stages committed it (concatenated when several write it)."""
        return pl.concat([self.folder.read(stage, table) for stage in self.writers[table]])
