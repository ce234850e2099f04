"""Grounding on Ray (`[execution] engine = "ray"`).

`ground_mentions` decides each mention alone, given the catalog: key joins per mention (scoped
items per request), fuzzy scores per distinct surface key, the best candidates per mention.
So batches of mentions are grounded by Ray Data actors (`GroundWorker`, each holding the
catalog) and the rows come back the same as one local call would give them. Same-title
disambiguation is not per mention (its prior counts the whole dataset), so the stage runs it
afterwards in this process, on both engines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from remark_data.stages.ground.grounding import ground_mentions

if TYPE_CHECKING:
    import pyarrow as pa

    from remark_data.config import ExecutionSpec, GroundSpec

WORKER_CPUS = 1.0  # matching is CPU-bound


def to_arrow(frame: pl.DataFrame) -> pa.Table:
    """Arrow with the plainest types (large_string, not string_view), which Ray Data blocks
    take everywhere."""
    return frame.to_arrow(compat_level=pl.CompatLevel.oldest())


class GroundWorker:
    """A Ray Data actor: grounds batches of mentions against the catalog it holds."""

    def __init__(self, *, catalog: pl.DataFrame, settings: GroundSpec) -> None:
        self.catalog = catalog
        self.settings = settings

    def __call__(self, batch: pa.Table) -> pa.Table:
        settings = self.settings
        mentions = pl.from_arrow(batch)
        assert isinstance(mentions, pl.DataFrame)
        groundings = ground_mentions(
            mentions,
            self.catalog,
            methods=settings.methods,
            year_tolerance=settings.year_tolerance,
            fuzzy_cutoff=settings.fuzzy_cutoff,
            creator_cutoff=settings.creator_cutoff,
        )
        return to_arrow(groundings)


def ground_on_ray(
    mentions: pl.DataFrame,
    catalog: pl.DataFrame,
    *,
    settings: GroundSpec,
    execution: ExecutionSpec,
) -> pl.DataFrame:
    """The `groundings` rows of `mentions` (conformed, in no particular order), grounded in
    batches of `execution.ground_batch_size` on Ray actors."""
    from remark_data.runner.ray_engine import map_batches
    from remark_data.schemas import conform

    batches = map_batches(
        to_arrow(mentions),
        GroundWorker,
        kwargs={"catalog": catalog, "settings": settings},
        execution=execution,
        rows_per_batch=execution.ground_batch_size,
        num_cpus=WORKER_CPUS,
    )
    frames = []
    for batch in batches:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        frames.append(conform(frame, "groundings"))
    return pl.concat(frames)
