"""Stage 3, ground: every mention to a catalog item (global catalog + the dataset's scoped one);
unmatched and ambiguous mentions are kept with a reason."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec
from remark_data.runner.context import StageContext
from remark_data.runner.stage import Stage, StageOutput
from remark_data.stages.ground.grounding import ground_mentions


def ground(context: StageContext) -> StageOutput:
    scoped = context.folder.read("scrape", "catalog")  # the scrape stage's private table
    global_catalog = context.resources.catalog()
    catalog = scoped if global_catalog is None else pl.concat([global_catalog, scoped])
    settings = context.spec.ground
    groundings = ground_mentions(
        context.read("mentions"),
        catalog,
        methods=settings.methods,
        year_tolerance=settings.year_tolerance,
        fuzzy_cutoff=settings.fuzzy_cutoff,
        creator_cutoff=settings.creator_cutoff,
    )
    by_status = groundings.group_by("status").len()
    counters: dict[str, int | float] = {
        f"mentions.{status}": n for status, n in by_status.iter_rows()
    }
    counters["catalog_items"] = catalog.height
    return StageOutput(tables={"catalog": catalog, "groundings": groundings}, counters=counters)


def _modules(spec: PipelineSpec) -> tuple[str, ...]:
    return ("remark_data.stages.ground.catalogs", "remark_data.stages.ground.grounding")


def _catalog_inputs(context: StageContext) -> dict[str, Path]:
    return {f"catalog.{role}": p for role, p in context.resources.catalog_files().items()}


STAGE = Stage(
    name="ground",
    reads=("mentions",),
    writes=("catalog", "groundings"),
    sections=("catalog", "ground"),
    compute=ground,
    modules=_modules,
    inputs=_catalog_inputs,
)
