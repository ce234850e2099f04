"""The hand-labelled gold format `remark eval` reads: one JSON object per comment.

    {"dataset": "reddit_movies", "request_id": "irpg1w", "comment_id": "g50qoo9",
     "titles": [{"surface": "Satyricon", "title": "Fellini Satyricon", "year": null,
                 "release_year": 1969, "kind": "movie", "creator": null,
                 "stance": "recommended", "item_id": "imdb:tt0064940", "in_catalog": "yes"}]}

`surface` is the text as the comment writes it, `title` the work's real title, `item_id` its
catalog id when `in_catalog` is "yes". A comment with no title has `"titles": []`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, TypeVar

import polars as pl
from pydantic import BaseModel, ConfigDict, ValidationError

from remark_data.errors import RemarkError
from remark_data.schemas import Stance
from remark_data.stages.ground.matching import normalize_title


class GoldTitle(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    surface: str
    title: str
    year: int | None = None
    release_year: int | None = None
    kind: str | None = None
    creator: str | None = None
    stance: Stance
    item_id: str | None = None
    in_catalog: Literal["yes", "no", "ambiguous"] = "no"


class GoldComment(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    dataset: str
    request_id: str
    comment_id: str
    titles: list[GoldTitle]


Line = TypeVar("Line", bound=BaseModel)


def read_lines(path: Path, model: type[Line]) -> list[tuple[int, Line]]:
    """(line number, parsed line) of a JSONL gold file; a bad line is a `RemarkError` naming the
    file, line and field."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RemarkError(f"{path}: cannot read the gold file ({exc})") from exc
    parsed = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            parsed.append((number, model.model_validate_json(line)))
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"]) or "(line)"
            raise RemarkError(f"{path}:{number}: {key}: {first['msg']}") from exc
    return parsed


def read_gold(path: Path) -> list[GoldComment]:
    """Parse a comment gold file; a bad line is a `RemarkError` naming the file and line."""
    comments = [comment for _, comment in read_lines(path, GoldComment)]
    if not comments:
        raise RemarkError(f"{path}: no gold comments")
    return comments


def gold_key(title: GoldTitle) -> str:
    """What a gold title is compared by: its catalog id, else its normalised title (so a title
    missing from the catalog still counts against recall)."""
    if title.item_id is not None and title.in_catalog == "yes":
        return title.item_id
    return "title:" + normalize_title(title.title)


def gold_frame(comments: list[GoldComment]) -> pl.DataFrame:
    """One row per recommended gold title: dataset, request_id, comment_id, key, surface."""
    rows = [
        (c.dataset, c.request_id, c.comment_id, gold_key(t), normalize_title(t.surface))
        for c in comments
        for t in c.titles
        if t.stance == "recommended"
    ]
    schema = ["dataset", "request_id", "comment_id", "key", "surface_key"]
    return pl.DataFrame(rows, schema=schema, orient="row").unique(maintain_order=True)


def merged_into(catalog: pl.DataFrame) -> dict[str, str]:
    """Each id in the catalog's `merged_ids` -> the item it was merged into, so gold labelled
    against an earlier catalog still names an item. RemarkError if one id has two homes.

    >>> merged_into(pl.DataFrame({"item_id": ["imdb:tt1"], "merged_ids": [["mv:a:1962"]]}))
    {'mv:a:1962': 'imdb:tt1'}
    """
    pairs = catalog.select("item_id", merged="merged_ids").explode("merged").drop_nulls("merged")
    twice = pairs.filter(pl.col("merged").is_duplicated())["merged"].unique().sort().to_list()
    if twice:
        raise RemarkError(f"catalog lists merged ids under two items: {twice[:5]}")
    return dict(zip(pairs["merged"], pairs["item_id"], strict=True))
