"""Stage 1, scrape: every source of a spec read into requests, responses and (pre-extracted)
mentions, plus a catalog scoped to the dataset (open items such as songs)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec
from remark_data.errors import RemarkError
from remark_data.runner.context import StageContext
from remark_data.runner.stage import Stage, StageOutput
from remark_data.schemas import conform
from remark_data.stages.scrape import ScrapedSource
from remark_data.stages.scrape.formats import SOURCE_FORMATS
from remark_data.stages.scrape.spec import SourceSpec


def read_source(source: SourceSpec, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    """Read one source of a spec with its format's reader."""
    return SOURCE_FORMATS[source.format].read(source, files, dataset=dataset)


def _inputs(context: StageContext) -> dict[str, Path]:
    files = context.resources.source_files()
    return {
        f"{source.name}.{name}": path
        for source in context.spec.sources
        for name, path in source.input_files(files[source.name]).items()
    }


def scrape(context: StageContext) -> StageOutput:
    spec = context.spec
    files = context.resources.source_files()
    parts = [read_source(s, files[s.name], dataset=spec.name) for s in spec.sources]
    counters: dict[str, int | float] = {}
    for source, part in zip(spec.sources, parts, strict=True):
        counters.update({f"{source.name}.{k}": v for k, v in part.counters.items()})
        counters[f"{source.name}.requests"] = part.requests.height
    tables = {
        name: pl.concat([conform(getattr(p, name), name) for p in parts])
        for name in ("requests", "responses", "mentions", "catalog")
    }
    duplicated = tables["requests"].filter(pl.col("request_id").is_duplicated())
    if not duplicated.is_empty():
        raise RemarkError(
            f"{spec.name}: request id {duplicated['request_id'][0]!r} appears in two sources"
        )
    quarantine = [
        f"{s.name}: {line}"
        for s, p in zip(spec.sources, parts, strict=True)
        for line in p.quarantine
    ]
    extra = {"quarantine.txt": "\n".join(quarantine) + "\n"} if quarantine else {}
    return StageOutput(tables=tables, counters=counters, files=extra)


def _modules(spec: PipelineSpec) -> tuple[str, ...]:
    """The reader modules a spec's sources use: an edit to another reader re-runs nothing."""
    return tuple(sorted({SOURCE_FORMATS[s.format].module for s in spec.sources}))


# `catalog` here is the dataset's scoped catalog, private to this stage: the ground stage
# reads it and writes the authoritative one.
STAGE = Stage(
    name="scrape",
    reads=(),
    writes=("requests", "responses", "mentions"),
    sections=("name", "sources"),
    compute=scrape,
    modules=_modules,
    inputs=_inputs,
)
