"""Misspelled multi-word titles: a title-shaped line ("Shawn of the Dead", "- The Shawshank
Redemtion (1994)") on which the gazetteer found nothing is compared with the catalog's
multi-word names by edit distance.

Guarded, because edit distance alone pays near-titles: the line must look like a title (an
optional list marker, 2–8 words starting with a capital, small words between, an optional year,
nothing else); the name must be at least 8 characters and two words; one catalog name must win
clearly (no other within 2 points); numbers must agree ("Interstate 66" is not "Interstate 60");
and a line that starts a longer catalog name is that name cut short, not a misspelling
("Pirates of the Caribbean" is not "Primates of the Caribbean"). The cutoff is the ground stage's
fuzzy cutoff, so grounding finds the same name again; pipelines that ground without `fuzzy`
skip this step. Exact matches are the gazetteer's (and its refusals stand).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set

import numpy as np
import polars as pl

from remark_data.stages.extract import mention_prefix
from remark_data.stages.extract.markup import mask_markup
from remark_data.stages.extract.stance import read_stance
from remark_data.stages.ground.matching import normalize_title

_SMALL = r"(?:of|the|a|an|and|in|on|to|for|from|with|at|or|is|my)"
_WORD = rf"(?:[A-Z0-9][\w'’:&.!-]*|{_SMALL})"
_TITLE_LINE = re.compile(
    r"^[^\S\n]*(?:(?:[-*•+]|\d{1,3}[.)])[^\S\n]+)?"
    rf"(?P<title>[A-Z0-9][\w'’:&.!-]*(?:[^\S\n]+{_WORD}){{1,7}})"
    r"[^\S\n]*(?:[\(\[][^\S\n]*(?P<year>\d{4})[^\S\n]*[\)\]])?[^\S\n]*[.!]?[^\S\n]*$",
    re.MULTILINE,
)
_NUMBER = re.compile(r"\d+")
MIN_CHARS = 8
CLEAR_WIN = 2.0


def title_lines(texts: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """Title-shaped lines with no mention on them: the text columns of `texts` plus surface,
    span_start, span_end, year and key (the normalised surface)."""
    spans: dict[str | None, list[tuple[int, int]]] = {}
    for comment_id, start, end in found.select("comment_id", "span_start", "span_end").rows():
        spans.setdefault(comment_id, []).append((start, end))
    rows = []
    columns = ("dataset", "request_id", "response_id", "responder_index", "comment_id", "text")
    for *ids, text in texts.select(*columns).iter_rows():
        taken = spans.get(ids[-1], [])
        masked = mask_markup(text)
        for line in _TITLE_LINE.finditer(masked):
            start, end = line.span("title")
            key = normalize_title(line["title"])
            if any(a < line.end() and b > line.start() for a, b in taken):
                continue
            if len(key) >= MIN_CHARS and len(key.split()) >= 2:
                year = int(line["year"]) if line["year"] else None
                stance = read_stance(masked, start, end)
                rows.append((*ids, text[start:end], start, end, year, key, stance))
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        **dict(texts.select(columns[:-1]).schema),
        "surface": pl.String, "span_start": pl.Int64, "span_end": pl.Int64,
        "year": pl.Int64, "key": pl.String, "stance": pl.String,
    }  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")


def closest_names(
    queries: list[str], names: list[str], *, cutoff: float, prefixes: Set[str] = frozenset()
) -> dict[str, str]:
    """query -> the one catalog name that wins clearly (score in [cutoff, 100), no other name
    within `CLEAR_WIN` points, the same numbers); queries in `prefixes` (the token prefixes of
    catalog names) are left out.

    >>> closest_names(["shawn of the dead", "dead of the shawn", "interstate 66"],
    ...               ["shaun of the dead", "dawn of the dead", "interstate 60"], cutoff=90)
    {'shawn of the dead': 'shaun of the dead'}
    """
    from rapidfuzz import fuzz, process

    queries = [q for q in queries if q not in prefixes]
    out: dict[str, str] = {}
    for first in range(0, len(queries), 1_000):
        block = queries[first : first + 1_000]
        scores = process.cdist(
            block, names, scorer=fuzz.ratio, score_cutoff=cutoff, workers=-1, dtype=np.float32
        )
        best = scores.max(axis=1)
        near = (scores >= (best - CLEAR_WIN)[:, None]) & (scores > 0)
        for i in np.nonzero((best >= cutoff) & (best < 100) & (near.sum(axis=1) == 1))[0]:
            name = names[int(scores[i].argmax())]
            if _NUMBER.findall(block[i]) == _NUMBER.findall(name):
                out[block[i]] = name
    return out


def misspelled_mentions(
    texts: pl.DataFrame,
    found: pl.DataFrame,
    keys: Mapping[str, set[str]],
    *,
    prefixes: Set[str],
    cutoff: float,
    kind: str | None,
) -> pl.DataFrame:
    """Mentions (gazetteer columns) of misspelled titles on title-shaped lines of `texts`
    (comments, role `response`) that `found` (the gazetteer's mentions) left empty."""
    lines = title_lines(texts, found)
    names = [k for k in keys if len(k) >= MIN_CHARS and " " in k]
    queries = lines["key"].unique().to_list()
    matched = closest_names(queries, names, cutoff=cutoff, prefixes=prefixes)
    hits = lines.filter(pl.col("key").is_in(list(matched)))
    stems = [
        mention_prefix(r, s, c)
        for r, s, c in hits.select("request_id", "response_id", "comment_id").rows()
    ]
    return hits.select(
        "dataset", "request_id", "response_id", "responder_index",
        pl.Series(stems, dtype=pl.String).alias("prefix"), "surface", "year", "stance",
        "comment_id", "span_start", "span_end",
    ).with_columns(
        pl.format("{}#f{}", "prefix", pl.int_range(pl.len()).over("prefix")).alias("mention_id"),
        role=pl.lit("response"), kind=pl.lit(kind, dtype=pl.String),
        creator=pl.lit(None, dtype=pl.String), extractor=pl.lit("gazetteer"),
    ).drop("prefix")  # fmt: skip
