"""Stage 2, extract (offline): a catalog gazetteer that finds titles in free text.

Every catalog title and alias becomes a normalised token key; a text is scanned once, left to
right, extending token n-grams only while they are a prefix of some key, and the longest match
wins. Cost grows with the text, not with the catalog (no per-title regex loop). Titles that are
common words ("Up", "Her", "It", "Heat", "Us") are only accepted with evidence: quotes around
them, a year after them, or a list context (the title alone on its line) — and capitalised.

Examples
--------
>>> gazetteer = Gazetteer([("m1", "Arrival"), ("m2", "Up"), ("m3", "The Dark Knight")])
>>> [(m.item_id, m.surface) for m in gazetteer.find("Loved Arrival and the dark knight, it was up there")]
[('m1', 'Arrival'), ('m3', 'the dark knight')]
>>> [(m.item_id, m.year) for m in gazetteer.find("1. Up (2009)")]
[('m2', 2009)]
"""  # noqa: E501

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from remark_data.schemas import MENTION_FIELDS, column_schema
from remark_data.stages.ground.matching import normalize_title

_TOKEN = re.compile(r"\S+")
# Evidence is read around a candidate with `pattern.match(text, pos)`, never on slices such as
# `text[:start]`: a slice (and a `$`-anchored search over it) costs the whole text per candidate,
# which made `find` quadratic. Checks on the text before a candidate match the reversed text at
# `len(text) - start`, so they too stop at the first character that decides them. Possessive
# quantifiers (`*+`) match what the greedy ones did, without backtracking through long blank runs.
_YEAR_AFTER = re.compile(r"\s*[\(\[]\s*(\d{4})\s*[\)\]]")
_BY_AFTER = re.compile(
    r"[\s\"'“”*_]*+(?:[\(\[]\s*\d{4}\s*[\)\]])?\s*+[,–—-]?\s*by\s+"
    r"(?P<creator>[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|de|van|von|le|la)){0,4})"
)
# Same line only: a capital on the next line starts the next list entry, not a longer title.
_CAPITAL_AFTER = re.compile(r"[^\S\n]+[A-Z]")
_NO_LETTER_TO_EOL = re.compile(r"(?:[^\w\n]|[\d_])*+(?:\n|\Z)")
#: A quote after spaces and emphasis marks; read forwards after a match, backwards before it.
_QUOTE_NEAR = re.compile(r"[ *_]*[\"'“”‘’]")
# Reversed: `text[:start]` ends with the word "by" / is blank or ends a sentence / is a list
# marker alone on its line ("- ", "3. ", "12) "). A line start is not a sentence start (the old
# `rstrip().endswith("\n")` never held): making it one would drop 504 of 34,278 movie mentions,
# "One of ...", "No matter ..." but also "Midsommar, Vivarium, ..." (issue 9), so it stays out.
_BY_BEFORE_REV = re.compile(r"\s*yb\b")
_SENTENCE_START_REV = re.compile(r"\s*(?:[.!?]|\Z)")
_LIST_LINE_REV = re.compile(r"[^\S\n]*+(?:[-*•]|[.)]\d{1,3})?[^\S\n]*(?:\n|\Z)")
_QUOTES = "\"'“”‘’*_"
_ARTICLES = {"the", "a", "an"}
MAX_TOKENS = 12
#: Words that are also titles; alone they need evidence (quotes, a year, a list line).
COMMON_WORDS = frozenset(
    """a about after again all always an and any as at away back bad be because before being
    best better big black blue body boy boys but by can change children city come cold
    crash dark day days dead do down drive eden end enough even every everything face fall
    family far fear fight find fire for found free friends from game gate get girl go god
    gone good great had happy hard have he heat her here him his home hope hot house how i
    if in inside into is it its just kids last let life light like little live long look
    lost love made man many me men mine more most mother my need never new next night no
    not nothing now of off old on once one only or other our out over people play red right
    room run said say see seven she sin so some something soul speed split still stop such
    sun take taken than that the their them then there these they thing things this those
    time to too true trust two under up us very war was water way we well what when where
    which while white who why will with without woman women work world year yes yesterday
    you young your""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class Found:
    item_id: str
    surface: str
    year: int | None
    start: int
    creator: str | None = None


class Gazetteer:
    """Token-prefix index over catalog names."""

    def __init__(self, names: Iterable[tuple[str, str]]) -> None:
        self.keys: dict[str, set[str]] = {}
        self.prefixes: set[str] = set()
        for item_id, name in names:
            key = normalize_title(name)
            if not key or len(key.split()) > MAX_TOKENS:
                continue
            self.keys.setdefault(key, set()).add(item_id)
            tokens = key.split()
            for n in range(1, len(tokens) + 1):
                self.prefixes.add(" ".join(tokens[:n]))

    @staticmethod
    def _needs_evidence(key: str) -> bool:
        """One-word titles ("Help", "Heat") and titles made only of common words."""
        tokens = key.split()
        return len(tokens) == 1 or all(t in COMMON_WORDS for t in tokens)

    @staticmethod
    def _has_evidence(text: str, rev: str, start: int, end: int, surface: str) -> bool:
        """Quotes, a year or a list line; or capitalised words not at a sentence start.

        `rev` is `text[::-1]`; `rev[back:]` is the text before the match, read backwards.
        """
        back = len(text) - start
        if _QUOTE_NEAR.match(rev, back) and _QUOTE_NEAR.match(text, end):
            return True
        if _YEAR_AFTER.match(text, end):
            return True
        if _BY_BEFORE_REV.match(rev, back):  # "by Shirley Jackson": an author, not a title
            return False
        if _BY_AFTER.match(text, end):
            return True
        if _CAPITAL_AFTER.match(text, end):  # "Lost Connections": part of a longer title
            return False
        if _LIST_LINE_REV.match(rev, back) and _NO_LETTER_TO_EOL.match(text, end):
            return True
        words = [w for w in re.findall(r"[^\W\d_]+", surface) if w.lower() not in _ARTICLES]
        capitalised = bool(words) and all(w[0].isupper() for w in words)
        sentence_start = _SENTENCE_START_REV.match(rev, back) is not None
        return capitalised and surface[0].isupper() and not sentence_start

    def find(self, text: str) -> list[Found]:
        """Non-overlapping title matches, longest first, left to right."""
        tokens = [(m.start(), m.end(), normalize_title(m.group())) for m in _TOKEN.finditer(text)]
        found: list[Found] = []
        rev = text[::-1]  # one copy per text, for the checks that read backwards
        i = 0
        while i < len(tokens):
            best: tuple[int, str] | None = None
            parts: list[str] = []
            for j in range(i, min(i + MAX_TOKENS + 1, len(tokens))):
                if tokens[j][2]:
                    parts.append(tokens[j][2])
                joined = " ".join(parts)
                key = joined
                if parts and parts[0] in _ARTICLES and len(parts) > 1:
                    key = " ".join(parts[1:])
                if key in self.keys and tokens[j][2]:  # never end a match on punctuation
                    best = (j, key)
                lone_article = len(parts) == 1 and parts[0] in _ARTICLES
                if not lone_article and joined not in self.prefixes and key not in self.prefixes:
                    break
            if best is None:
                i += 1
                continue
            j, key = best
            span = text[tokens[i][0] : tokens[j][1]]
            surface = span.strip(_QUOTES + ",.;:!?()")
            start = tokens[i][0] + max(span.find(surface), 0)
            end = start + len(surface)
            if self._needs_evidence(key) and not self._has_evidence(text, rev, start, end, surface):
                i += 1
                continue
            year_match = _YEAR_AFTER.match(text, end)
            by_match = _BY_AFTER.match(text, end)
            year = int(year_match.group(1)) if year_match else None
            creator = by_match.group("creator") if by_match else None
            for item_id in sorted(self.keys[key]):
                found.append(Found(item_id, surface, year, start, creator))
            i = j + 1
        return found


def gazetteer_mentions(
    texts: pl.DataFrame, gazetteer: Gazetteer, *, role: str, kind: str | None
) -> pl.DataFrame:
    """Mentions from a frame of (dataset, request_id, response_id, responder_index, text).

    A title named twice in one text is one mention; a key shared by several catalog items (two
    films called "Heat") becomes one mention whose grounding decides between them by year.
    """
    rows = []
    for dataset, request_id, response_id, responder_index, text in texts.select(
        "dataset", "request_id", "response_id", "responder_index", "text"
    ).iter_rows():
        if not text:
            continue
        seen: set[str] = set()
        for position, hit in enumerate(gazetteer.find(text)):
            key = normalize_title(hit.surface)
            if key in seen:
                continue
            seen.add(key)
            prefix = response_id if response_id is not None else f"{request_id}/seen"
            rows.append(
                (dataset, request_id, response_id, responder_index, f"{prefix}#g{position}",
                 role, kind, hit.surface, hit.year, hit.creator)
            )  # fmt: skip
    schema = column_schema("mentions", *MENTION_FIELDS)
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit("recommended" if role == "response" else "mentioned").alias("stance"),
        pl.lit("gazetteer").alias("extractor"),
    )
