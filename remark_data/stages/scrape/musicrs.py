"""MusiCRS music threads with pre-extracted artists, albums and songs (no text, no authors).

Each comment with entities is a responder (flagged ``no_author_ids``). No song catalog exists
here, so songs become open items keyed by the normalised "song — artist" (the artist when the
comment names exactly one), created from the mentions themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl

from remark_data.schemas import MENTION_FIELDS, column_schema
from remark_data.stages.ground.matching import normalize_title
from remark_data.stages.scrape import (
    ScrapedSource,
    SourceFormat,
    mentions_table,
    read_jsonl,
    requests_table,
    responses_table,
)
from remark_data.stages.scrape.spec import SourceSpec

_QUOTES = "\"'“”‘’ "


@dataclass(kw_only=True)
class _Thread:
    """One thread's rows: its request, responders, mentions and the open song items named."""

    request: tuple[str, str]
    responses: list[tuple[str, str, int]] = field(default_factory=list)
    mentions: list[tuple[Any, ...]] = field(default_factory=list)
    songs: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def _named(entities: dict[str, Any], thread: _Thread) -> list[tuple[str, str, str | None]]:
    """(kind, surface, creator) of a comment's entities; songs keyed "song — sole artist"."""
    artists = [a.strip(_QUOTES) for a in entities.get("artists") or []]
    sole_artist = artists[0] if len(set(artists)) == 1 else None
    named: list[tuple[str, str, str | None]] = [("artist", a, None) for a in artists]
    named += [("album", a.strip(_QUOTES), None) for a in entities.get("albums") or []]
    for song in entities.get("songs") or []:
        title = song.strip(_QUOTES)
        key = normalize_title(title)
        if not key:
            continue
        if sole_artist:
            key = f"{key} — {normalize_title(sole_artist)}"
        thread.songs.setdefault(key, (title, sole_artist))
        named.append(("song", key, sole_artist))
    return named


def _thread(record: dict[str, Any], *, dataset: str) -> _Thread:
    request_id = record["name"].removeprefix("t3_")
    thread = _Thread(request=(request_id, record["combined_text"]))
    for position, title in enumerate(record.get("submission_entities") or []):
        seen = (dataset, request_id, None, None, f"{request_id}/seen#{position}", "seen")
        thread.mentions.append((*seen, None, title.strip(_QUOTES), None, None))
    for comment in record["comments"]:
        entities = comment.get("entities") or {}
        if not any(entities.get(k) for k in ("artists", "albums", "songs")):
            continue
        index = len(thread.responses)
        response_id = f"{request_id}/{comment['name'].removeprefix('t1_')}"
        thread.responses.append((request_id, response_id, index))
        for position, (kind, surface, creator) in enumerate(_named(entities, thread)):
            if surface:
                where = (dataset, request_id, response_id, index, f"{response_id}#{position}")
                thread.mentions.append((*where, "response", kind, surface, None, creator))
    return thread


def _song_catalog(songs: dict[str, tuple[str, str | None]], *, dataset: str) -> pl.DataFrame:
    """The open song items: id ``song:<key>``, the first title and artist seen for the key."""
    return pl.DataFrame(
        [(f"song:{key}", title, artist, [key]) for key, (title, artist) in songs.items()],
        schema={
            "item_id": pl.String,
            "title": pl.String,
            "creator": pl.String,
            "aliases": pl.List(pl.String),
        },
        orient="row",
    ).select(
        pl.lit(dataset).alias("dataset"),
        "item_id",
        "title",
        pl.lit(None, dtype=pl.Int64).alias("year"),
        "creator",
        "aliases",
        pl.lit("song").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("scope"),
        pl.lit([], dtype=pl.List(pl.String)).alias("merged_ids"),
        pl.lit([], dtype=pl.List(pl.String)).alias("listed_by"),
    )


def read_musicrs(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    threads = list(read_jsonl(path, lambda r: _thread(r, dataset=dataset), what="a MusiCRS thread"))
    songs: dict[str, tuple[str, str | None]] = {}
    for thread in threads:
        for key, song in thread.songs.items():
            songs.setdefault(key, song)
    mentions = pl.DataFrame(
        [m for t in threads for m in t.mentions],
        schema=column_schema("mentions", *MENTION_FIELDS),
        orient="row",
    )
    responses = pl.DataFrame(
        [r for t in threads for r in t.responses],
        schema={"request_id": pl.String, "response_id": pl.String, "responder_index": pl.Int64},
        orient="row",
    )
    return ScrapedSource(
        requests=pl.DataFrame(
            [t.request for t in threads],
            schema={"request_id": pl.String, "prompt": pl.String},
            orient="row",
        ).pipe(requests_table, dataset=dataset, source=source, split=split),
        responses=responses_table(
            responses,
            dataset=dataset,
            text=pl.lit(None, dtype=pl.String),
            flag=pl.lit("no_author_ids"),
        ),
        mentions=mentions_table(
            mentions,
            dataset=dataset,
            mention_id=pl.col("mention_id"),
            role=pl.col("role"),
            kind=pl.col("kind"),
            surface=pl.col("surface"),
            creator=pl.col("creator"),
        ),
        catalog=_song_catalog(songs, dataset=dataset),
        counters={
            "threads": len(threads),
            "responders": responses.height,
            "open_song_items": len(songs),
        },
    )


class MusiCRS(SourceSpec):
    """MusiCRS threads (JSONL) with the artists, albums and songs of each comment."""

    format: Literal["musicrs_jsonl"]
    roles: ClassVar[tuple[str, ...]] = ("threads",)


def _read(source: MusiCRS, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_musicrs(files["threads"], dataset=dataset, source=source.name, split=source.split)


FORMATS = (SourceFormat(spec=MusiCRS, read=_read),)
