"""Stage 3, ground: every mention to a catalog item (global catalog + the dataset's scoped one);
unmatched and ambiguous mentions are kept with a reason."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec
from remark_data.runner.context import StageContext
from remark_data.runner.stage import Stage, StageOutput
from remark_data.schemas import MATCHED_STATUSES, conform
from remark_data.stages.ground.disambiguate import disambiguate
from remark_data.stages.ground.grounding import ground_mentions


def ground(context: StageContext) -> StageOutput:
    scoped = context.folder.read("scrape", "catalog")  # the scrape stage's private table
    global_catalog = context.resources.catalog()
    catalog = scoped if global_catalog is None else pl.concat([global_catalog, scoped])
    settings = context.spec.ground
    mentions = context.read("mentions")
    if context.spec.execution.engine == "ray" and not mentions.is_empty():
        from remark_data.stages.ground.distributed import ground_on_ray

        context.progress(f"{mentions.height} mentions on Ray")
        groundings = ground_on_ray(
            mentions, catalog, settings=settings, execution=context.spec.execution
        )
    else:
        groundings = ground_mentions(
            mentions,
            catalog,
            methods=settings.methods,
            year_tolerance=settings.year_tolerance,
            fuzzy_cutoff=settings.fuzzy_cutoff,
            creator_cutoff=settings.creator_cutoff,
        )
    groundings = conform(groundings, "groundings")
    if settings.disambiguate and (groundings["status"] == "ambiguous").any():
        groundings = resolve_same_titles(
            groundings,
            context.read("responses"),
            catalog,
            min_prior=settings.min_prior,
            prior_ratio=settings.prior_ratio,
            listing_margin=settings.listing_margin,
        )
    groundings = in_mention_order(groundings, mentions)
    by_status = groundings.group_by("status").len()
    counters: dict[str, int | float] = {
        f"mentions.{status}": n for status, n in by_status.iter_rows()
    }
    for rule, n in groundings.drop_nulls("resolution").group_by("resolution").len().iter_rows():
        counters[f"resolved_by.{rule}"] = n
    counters["catalog_items"] = catalog.height
    # Near-duplicates folded at load (`merge`): listed per item in the catalog's `merged_ids`.
    counters["catalog_duplicates_merged"] = int(catalog["merged_ids"].list.len().sum())
    return StageOutput(tables={"catalog": catalog, "groundings": groundings}, counters=counters)


def in_mention_order(groundings: pl.DataFrame, mentions: pl.DataFrame) -> pl.DataFrame:
    """`groundings` (one row per mention) in the order of `mentions`: the table is then the
    same whichever engine, and however many batches, grounded it.

    >>> mentions = pl.DataFrame({"mention_id": ["b", "a", "c"]})
    >>> in_mention_order(pl.DataFrame({"mention_id": ["a", "c", "b"], "x": [1, 2, 3]}),
    ...                  mentions)["mention_id"].to_list()
    ['b', 'a', 'c']
    """
    order = (
        mentions.select("mention_id")
        .with_row_index("_order")
        .unique("mention_id", keep="first", maintain_order=True)
    )
    return (
        groundings.join(order, on="mention_id", how="left")
        .sort("_order", maintain_order=True, nulls_last=True)
        .drop("_order")
    )


def resolve_same_titles(
    groundings: pl.DataFrame,
    responses: pl.DataFrame,
    catalog: pl.DataFrame,
    *,
    min_prior: int,
    prior_ratio: float,
    listing_margin: int,
) -> pl.DataFrame:
    """Ambiguous groundings that a `disambiguate` rule settles become `disambiguated`, with
    the rule in `resolution` and its evidence in `reason`; the candidates stay listed."""
    written = responses.select(
        "response_id",
        pl.from_epoch("created_utc", time_unit="s").dt.year().cast(pl.Int64).alias("latest_year"),
    )
    ambiguous = (
        groundings.filter(pl.col("status") == "ambiguous")
        .join(written, on="response_id", how="left")
        .select("mention_id", "request_id", "candidates", "latest_year")
    )
    if ambiguous.is_empty():
        return groundings
    unambiguous = groundings.filter(pl.col("status").is_in(MATCHED_STATUSES)).select(
        "request_id", "item_id"
    )
    decided = disambiguate(
        ambiguous,
        unambiguous,
        catalog.select("item_id", "year", "listed_by"),
        min_prior=min_prior,
        prior_ratio=prior_ratio,
        listing_margin=listing_margin,
    )
    return (
        groundings.join(decided, on="mention_id", how="left", suffix="_decided")
        .with_columns(
            pl.coalesce("item_id_decided", "item_id").alias("item_id"),
            pl.when(pl.col("resolution_decided").is_not_null())
            .then(pl.lit("disambiguated"))
            .otherwise(pl.col("status"))
            .alias("status"),
            pl.coalesce("reason_decided", "reason").alias("reason"),
            pl.coalesce("resolution_decided", "resolution").alias("resolution"),
        )
        .select(groundings.columns)
    )


def _modules(spec: PipelineSpec) -> tuple[str, ...]:
    # The Ray path's code counts on either engine: the two must give the same tables.
    return (
        "remark_data.stages.ground.catalogs",
        "remark_data.stages.ground.grounding",
        "remark_data.stages.ground.disambiguate",
        "remark_data.stages.ground.merge",
        "remark_data.stages.ground.distributed",
    )


def _catalog_inputs(context: StageContext) -> dict[str, Path]:
    return {f"catalog.{role}": p for role, p in context.resources.catalog_files().items()}


STAGE = Stage(
    name="ground",
    reads=("mentions", "responses"),
    writes=("catalog", "groundings"),
    sections=("catalog", "ground"),
    compute=ground,
    modules=_modules,
    inputs=_catalog_inputs,
)
