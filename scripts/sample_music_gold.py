"""Select the music grounding gold mentions (artists -> Last.fm, albums -> Rolling Stone 500).

Reads the scrape stage of `remark run reddit_music` (data/runs/reddit_music/scrape/). Only
MusiCRS threads, role "response", kinds artist and album. Threads sorted by request id as strings.

- Artist part: threads at positions 0, 5, 10, ... (every 5th); in each, one comment drawn with
  `random.Random(SEED)` among the comments with an artist mention; all its artist and album
  mentions are kept. Stops once the sample holds >= 150 artist mentions.
- Album part: threads at positions 2, 7, 12, ... (every 5th, from the 3rd); in each, one comment
  drawn with the same generator among the comments with an album mention; its album mentions are
  kept. Stops once the whole sample holds >= 75 album mentions.

    python scripts/sample_music_gold.py OUT.jsonl   # one line per mention, for labelling

Each line: request_id, response_id, mention_id, kind, surface, creator, the request prompt and
the comment's text (MusiCRS has none: null) with all entities of the comment (songs too).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import polars as pl

SCRAPE = Path(__file__).resolve().parents[1] / "data/runs/reddit_music/scrape"
SEED = 20240601
STEP = 5
MIN_ARTISTS = 150
MIN_ALBUMS = 75


def _pick(rng: random.Random, mentions: pl.DataFrame, request_id: str, kind: str) -> str | None:
    """One comment of the thread (response id) with a mention of `kind`, or None."""
    ids = (
        mentions.filter(pl.col("request_id") == request_id, pl.col("kind") == kind)
        .get_column("response_id")
        .unique()
        .sort()
        .to_list()
    )
    return rng.choice(ids) if ids else None


def sample(mentions: pl.DataFrame, request_ids: list[str]) -> list[dict]:
    """The sampled artist/album mentions, in draw order."""
    rng = random.Random(SEED)
    rows: list[dict] = []

    def count(kind: str) -> int:
        return sum(row["kind"] == kind for row in rows)

    for request_id in request_ids[0::STEP]:
        if count("artist") >= MIN_ARTISTS:
            break
        if (response_id := _pick(rng, mentions, request_id, "artist")) is not None:
            rows += mentions.filter(pl.col("response_id") == response_id).to_dicts()
    for request_id in request_ids[2::STEP]:
        if count("album") >= MIN_ALBUMS:
            break
        if (response_id := _pick(rng, mentions, request_id, "album")) is not None:
            rows += mentions.filter(
                pl.col("response_id") == response_id, pl.col("kind") == "album"
            ).to_dicts()
    return rows


def main() -> None:
    requests = pl.read_parquet(SCRAPE / "requests.parquet").filter(pl.col("source") == "musicrs")
    all_mentions = pl.read_parquet(SCRAPE / "mentions.parquet").filter(
        pl.col("role") == "response",
        pl.col("request_id").is_in(requests.get_column("request_id").implode()),
    )
    texts = dict(
        pl.read_parquet(SCRAPE / "responses.parquet").select("response_id", "text").iter_rows()
    )
    prompts = dict(requests.select("request_id", "prompt").iter_rows())
    mentions = all_mentions.filter(pl.col("kind").is_in(["artist", "album"]))
    rows = sample(mentions, sorted(prompts))
    with open(sys.argv[1], "w") as out:
        for row in rows:
            comment = all_mentions.filter(pl.col("response_id") == row["response_id"])
            entities = {
                kind: comment.filter(pl.col("kind") == kind).get_column("surface").to_list()
                for kind in ("artist", "album", "song")
            }
            keep = ("request_id", "response_id", "mention_id", "kind", "surface", "creator")
            line = {key: row[key] for key in keep} | {
                "prompt": prompts[row["request_id"]],
                "text": texts.get(row["response_id"]),
                "comment_entities": entities,
            }
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    kinds = [row["kind"] for row in rows]
    threads = len({row["request_id"] for row in rows})
    print(
        f"{len(rows)} mentions ({kinds.count('artist')} artists, {kinds.count('album')} albums) "
        f"from {threads} threads",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
