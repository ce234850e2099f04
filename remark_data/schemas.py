"""The data model: one pydantic model per table, the single source of truth.

Polars schemas and the JSON Schema files in ``schemas/`` are derived from these models, so a
column is added in exactly one place.

Examples
--------
>>> from remark_data.schemas import Label, polars_schema
>>> polars_schema(Label)["n_responders"]
Int64
"""

# long-module: every table's row model and the literals its columns take, kept in one place
# on purpose (a new column or stage touches this file only).

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Request(_Row):
    """One request x: a Reddit thread, a ProtoQA question or a grouped Rank-GRPO prompt."""

    dataset: str = Field(description="Pipeline (dataset) name, e.g. `protoqa`.")
    request_id: str = Field(
        description="Stable id: ProtoQA question id, submission id or prompt hash."
    )
    split: str
    source: str = Field(description="Id of the source the request came from.")
    prompt: str = Field(description="The request text as a recommender sees it.")
    seen_titles: list[str] = Field(description="Titles the requester has already seen (raw text).")


class Response(_Row):
    """One responder j of a request; every responder is one row (ProtoQA counts are expanded)."""

    dataset: str
    request_id: str
    response_id: str
    responder_index: int = Field(
        description="Position of the responder within its request, 0-based."
    )
    responder_id: str = Field(description="Distinct author within the request, or a synthetic id.")
    text: str | None = Field(description="The response text, when the source has it.")
    responder_flag: str | None = Field(
        description="`null_author` (a comment without author), `no_author_ids` (a source without "
        "authors: each comment counted as a responder), or null."
    )
    comment_ids: list[str] = Field(
        description="The source comments merged into `text`, in order (the response id itself "
        "when the source has no comments)."
    )
    comment_starts: list[int] = Field(
        description="Where each comment starts in `text` (characters; comments are joined by a "
        "blank line)."
    )
    created_utc: int | None = Field(description="When the last of its comments was written.")


#: How a response uses a title it names (DESIGN.md: only recommended mentions enter the union).
#: The pipeline's stages, in order (`remark_data.pipeline.STAGES` holds their records).
StageName = Literal["scrape", "extract", "ground", "aggregate", "stats"]

Stance = Literal["recommended", "referenced", "negative"]

#: A mention grounded to one catalog item, by what matched it: its raw text, its normalised
#: title, a normalised title whose year differs within the tolerance, a fuzzy match, or a rule
#: that chose between same-title items (`Grounding.resolution`).
MatchedStatus = Literal["exact", "normalized", "year_tolerance", "fuzzy", "disambiguated"]
#: A mention kept out of the labels: no catalog item matched it, or several did equally well.
UnresolvedStatus = Literal["unmatched", "ambiguous"]
#: Every grounding status, the one list every other derives from.
GroundingStatus = Literal[MatchedStatus, UnresolvedStatus]
MATCHED_STATUSES: tuple[MatchedStatus, ...] = typing.get_args(MatchedStatus)
GROUNDING_STATUSES: tuple[GroundingStatus, ...] = typing.get_args(GroundingStatus)


class Mention(_Row):
    """A title (or answer) named in a response, or a seen title named in the request."""

    dataset: str
    request_id: str
    response_id: str | None = Field(
        description="Null for mentions of the request itself (seen items)."
    )
    responder_index: int | None = Field(
        description="The responder's position; null for seen items."
    )
    mention_id: str
    role: Literal["response", "seen"]
    kind: str | None = Field(
        description="movie, book, artist, album, song, answer; null if unknown."
    )
    surface: str = Field(description="The text as it appears in the source.")
    year: int | None
    creator: str | None
    stance: Stance = Field(
        description="Only `recommended` mentions enter the union; `referenced`: the requester's "
        "titles and points of comparison; `negative`: advised against."
    )
    comment_id: str | None = Field(
        description="The comment the text was read from (null for seen items and sources "
        "that give mentions without comments)."
    )
    span_start: int | None = Field(
        description="Where `surface` starts in that comment (or, for seen items, in the prompt)."
    )
    span_end: int | None = Field(description="Where `surface` ends (exclusive).")
    extractor: str = Field(
        description="What produced it: `source` (pre-extracted), `gazetteer`, `llm`, `hybrid` "
        "(a gazetteer candidate the model kept, or a title it added)."
    )


class Grounding(_Row):
    """The catalog item a mention resolved to, or why it did not resolve.

    Carries the mention's response, role and stance so aggregation reads this table alone.
    """

    dataset: str
    request_id: str
    response_id: str | None
    responder_index: int | None
    mention_id: str
    role: Literal["response", "seen"]
    stance: Stance
    item_id: str | None
    status: GroundingStatus
    score: float = Field(description="Match score in [0, 100]; 100 for exact keys.")
    reason: str | None = Field(
        description="Why a mention is unmatched or ambiguous, or how it was disambiguated."
    )
    candidates: list[str] | None = Field(
        description="The same-title items a mention matched equally well (ambiguous or "
        "disambiguated); null otherwise."
    )
    resolution: str | None = Field(
        description="The rule that chose among the candidates: release_date, thread, prior or "
        "catalogs."
    )


class CatalogItem(_Row):
    """An item a title can ground to. `scope` limits it to one request (ProtoQA answer clusters)."""

    dataset: str
    item_id: str
    title: str
    year: int | None
    creator: str | None
    aliases: list[str]
    kind: str | None = Field(description="movie, book, artist, album, song, answer.")
    scope: str | None = Field(
        description="request_id the item belongs to, or null for global items."
    )
    merged_ids: list[str] = Field(
        description="Near-duplicate entries folded into this item (same kind and normalised "
        "title, years within 1): their ids no longer occur."
    )
    listed_by: list[str] = Field(
        description="The source catalogs merged into this one that list the item (empty for a "
        "single-source catalog): how widely known it is, which tells same-title items apart."
    )


class LabelItem(_Row):
    item_id: str
    title: str
    year: int | None
    creator: str | None
    aliases: list[str] = Field(
        description="The item's other match strings (catalog aliases; ProtoQA: its cluster's "
        "answer strings): trainers and `remark diagnose` match completions against both."
    )
    count: int = Field(description="c_i: responders that mentioned the item.")
    p_hat: float = Field(description="p̂_i = c_i / n_x.")


class Label(_Row):
    """One training example per request: the ReMaRk labels."""

    dataset: str
    request_id: str
    split: str
    source: str
    prompt: str
    seen_titles: list[str]
    seen_item_ids: list[str]
    n_responders: int = Field(description="n_x.")
    items: list[LabelItem] = Field(description="Union items, most mentioned first.")
    union_item_ids: list[str] = Field(description="U_x = {i : c_i >= 1}.")
    responder_item_ids: list[list[str]] = Field(description="S_j per responder, in response order.")
    match_steps: list[str] = Field(
        description="How a reward matches a generated line to these items (`[rewards]`)."
    )
    groundtruth_with_release_year: list[list[str]] = Field(
        description="Rank-GRPO-compatible [title, year] pairs of the union (year '' when unknown)."
    )


class ResponderCount(_Row):
    n_responders: int
    n_requests: int


class Stat(_Row):
    """Label statistics of one dataset split (`all` pools the splits)."""

    dataset: str
    split: str
    n_requests: int
    n_responders: int
    n_mentions: int = Field(description="Σ_x Σ_i c_i: grounded (responder, item) pairs.")
    n_union_items: int = Field(description="Σ_x |U_x|.")
    responders_mean: float
    responders_median: float
    responders_max: int
    responders_hist: list[ResponderCount]
    single_responder_share: float = Field(description="Share of requests with n_x = 1.")
    single_mention_share: float = Field(description="Share of union items with c_i = 1.")
    union_to_sum: float = Field(description="Σ_i min(c_i, 1) / Σ_i c_i.")
    group_size: int = Field(description="G used for the Proposition 2 bound.")
    prop2_bound: float = Field(
        description="Proposition 2: max_m std / min_m std of G binary rewards."
    )


TABLES: dict[str, type[_Row]] = {
    "requests": Request,
    "responses": Response,
    "mentions": Mention,
    "groundings": Grounding,
    "catalog": CatalogItem,
    "labels": Label,
    "stats": Stat,
}

_SCALARS: dict[type, pl.DataType] = {
    str: pl.String(),
    int: pl.Int64(),
    float: pl.Float64(),
    bool: pl.Boolean(),
}


def _dtype(annotation: object) -> pl.DataType:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {annotation}")
        return _dtype(args[0])
    if origin is Literal:
        return pl.String()
    if origin is list:
        (inner,) = typing.get_args(annotation)
        return pl.List(_dtype(inner))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pl.Struct(polars_schema(annotation))
    if annotation in _SCALARS:
        return _SCALARS[annotation]  # type: ignore[index]
    raise TypeError(f"no polars type for {annotation!r}")


def polars_schema(model: type[BaseModel]) -> pl.Schema:
    """The polars schema of a table model, columns in field order.

    Examples
    --------
    >>> polars_schema(Grounding)["item_id"]
    String
    """
    return pl.Schema({name: _dtype(f.annotation) for name, f in model.model_fields.items()})


#: The columns an extractor fills for each mention, in this order (stance and extractor follow).
MENTION_FIELDS = (
    "dataset", "request_id", "response_id", "responder_index", "mention_id", "role", "kind",
    "surface", "year", "creator",
)  # fmt: skip
#: Where a mention was read: the comment and the character span of its surface there.
SPAN_FIELDS = ("comment_id", "span_start", "span_end")


def column_schema(table: str, *columns: str) -> dict[str, pl.DataType]:
    """The polars types of some columns of a table, to build rows of it column by column.

    >>> column_schema("mentions", "surface", "year")
    {'surface': String, 'year': Int64}
    """
    schema = polars_schema(TABLES[table])
    return {column: schema[column] for column in columns}


def conform(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """Select and cast `frame` to the table's schema; a missing column is a programming error."""
    schema = polars_schema(TABLES[table])
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise ValueError(f"table {table!r} is missing columns {missing}")
    return frame.select([pl.col(c).cast(dtype) for c, dtype in schema.items()])


def json_schemas() -> dict[str, str]:
    """JSON Schema text of every table, keyed by file name."""
    return {
        f"{name}.schema.json": json.dumps(model.model_json_schema(), indent=2, sort_keys=True)
        + "\n"
        for name, model in TABLES.items()
    }


def export_json_schemas(directory: Path) -> list[Path]:
    """Write one JSON Schema file per table into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, text in json_schemas().items():
        path = directory / file_name
        path.write_text(text)
        written.append(path)
    return written
