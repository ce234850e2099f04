"""MusiCRS music threads with pre-extracted artists, albums and songs (no text, no authors).

Each comment with entities is a responder (flagged ``no_author_ids``). No song catalog exists
here, so songs become open items keyed by the normalised "song — artist" (the artist when the
comment names exactly one), created from the mentions themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.errors import RemarkError
from remark_data.schemas import MENTION_FIELDS, column_schema
from remark_data.stages.ground.matching import normalize_title
from remark_data.stages.scrape import ScrapedSource, requests_table

_QUOTES = "\"'“”‘’ "


def read_musicrs(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    requests: list[tuple[str, str]] = []
    responses: list[tuple[str, str, int]] = []
    mentions: list[tuple[Any, ...]] = []
    songs: dict[str, tuple[str, str | None]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            thread = json.loads(line)
            request_id = thread["name"].removeprefix("t3_")
            requests.append((request_id, thread["combined_text"]))
            for position, title in enumerate(thread.get("submission_entities") or []):
                mention_id = f"{request_id}/seen#{position}"
                seen = (dataset, request_id, None, None, mention_id, "seen", None)
                mentions.append((*seen, title.strip(_QUOTES), None, None))
            index = 0
            for comment in thread["comments"]:
                entities = comment.get("entities") or {}
                if not any(entities.get(k) for k in ("artists", "albums", "songs")):
                    continue
                response_id = f"{request_id}/{comment['name'].removeprefix('t1_')}"
                responses.append((request_id, response_id, index))
                artists = [a.strip(_QUOTES) for a in entities.get("artists") or []]
                sole_artist = artists[0] if len(set(artists)) == 1 else None
                named = [("artist", a, None) for a in artists]
                named += [("album", a.strip(_QUOTES), None) for a in entities.get("albums") or []]
                for song in entities.get("songs") or []:
                    title = song.strip(_QUOTES)
                    key = normalize_title(title)
                    if not key:
                        continue
                    if sole_artist:
                        key = f"{key} — {normalize_title(sole_artist)}"
                    songs.setdefault(key, (title, sole_artist))
                    named.append(("song", key, sole_artist))
                for position, (kind, surface, creator) in enumerate(named):
                    if surface:
                        mention_id = f"{response_id}#{position}"
                        where = (dataset, request_id, response_id, index, mention_id, "response")
                        mentions.append((*where, kind, surface, None, creator))
                index += 1
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise RemarkError(f"{path}:{number}: not a MusiCRS thread ({exc})") from exc
    mention_frame = pl.DataFrame(
        mentions,
        schema=column_schema("mentions", *MENTION_FIELDS),
        orient="row",
    )
    catalog = pl.DataFrame(
        [(f"song:{key}", title, artist, [key]) for key, (title, artist) in songs.items()],
        schema={
            "item_id": pl.String,
            "title": pl.String,
            "creator": pl.String,
            "aliases": pl.List(pl.String),
        },
        orient="row",
    )
    return ScrapedSource(
        requests=pl.DataFrame(
            requests, schema={"request_id": pl.String, "prompt": pl.String}, orient="row"
        ).pipe(requests_table, dataset=dataset, source=source, split=split),
        responses=pl.DataFrame(
            responses,
            schema={"request_id": pl.String, "response_id": pl.String, "responder_index": pl.Int64},
            orient="row",
        ).select(
            pl.lit(dataset).alias("dataset"),
            "request_id",
            "response_id",
            "responder_index",
            pl.col("response_id").alias("responder_id"),
            pl.lit(None, dtype=pl.String).alias("text"),
            pl.lit("no_author_ids").alias("responder_flag"),
        ),
        mentions=mention_frame.select(
            *MENTION_FIELDS,
            pl.when(pl.col("role") == "seen")
            .then(pl.lit("mentioned"))
            .otherwise(pl.lit("recommended"))
            .alias("stance"),
            pl.lit("source").alias("extractor"),
        ),
        catalog=catalog.select(
            pl.lit(dataset).alias("dataset"),
            "item_id",
            "title",
            pl.lit(None, dtype=pl.Int64).alias("year"),
            "creator",
            "aliases",
            pl.lit("song").alias("kind"),
            pl.lit(None, dtype=pl.String).alias("scope"),
        ),
        counters={
            "threads": len(requests),
            "responders": len(responses),
            "open_song_items": len(songs),
        },
    )
