"""Stage 2, extract (offline): a catalog gazetteer that finds titles in free text.

Every catalog title and alias is a normalised token key; a text is scanned once, extending token
n-grams while they prefix some key, longest match first, so cost grows with the text, not the
catalog. One-word and common-word titles ("Up", "Her", "Heat") need evidence (`_has_evidence`).

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

from remark_data.schemas import MENTION_FIELDS, SPAN_FIELDS, Stance, column_schema
from remark_data.stages.extract import mention_prefix
from remark_data.stages.extract.markup import mask_markup
from remark_data.stages.extract.stance import read_stance
from remark_data.stages.extract.words import COMMON_WORDS, FUNCTION_WORDS
from remark_data.stages.extract.years import year_after
from remark_data.stages.ground.matching import normalize_title

# Glued punctuation splits tokens ("Rope(1948),", "Brick,Blood Simple", "mitty...its"); a
# single "." stays inside one ("Dr.", "L.A.").
_TOKEN = re.compile(r"(?:[^\s,;()\[\]{}\"“”*!?/|.]|\.(?!\.))+")
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
# A capitalised word, possibly after one or two small words, right before / after a candidate
# on the same line: the candidate is part of a longer name ("Robin Williams", "Queen of Mars").
_NAME_BEFORE_REV = re.compile(
    r"[^\S\n]+(?:(?:fo|eht|a|ni|no|ta)[^\S\n]+){0,2}(?![s][\'’])[\w\'’.]*[A-Z]\b"
)  # a possessive ("Hitchcock's Rebecca") credits the title, it is not part of a name
_NAME_AFTER = re.compile(r"[^\S\n]+(?:(?:of|the|a|in|on|at)[^\S\n]+){1,2}[A-Z]")
_OPEN_PAREN_REV = re.compile(r"[^\S\n]*\(")
_HEADING_AFTER = re.compile(r"[^\S\n]*:[^\S\n]*(?:\n|\Z)")
_SINGLE_LETTERS = re.compile(r"\b\w(?: \w\b)+")
_LIST_GAP = re.compile(
    r"(?:[\s,;&/|*_\"'“”‘’.\-–—•>+]|\d{1,3}[.)](?=\s)|[\(\[]\s*\d{4}\s*[\)\]]|\band\b|\bor\b)*"
)
_LIST_SEPARATOR = re.compile(r"[,;&/|\n•+]|\band\b|\bor\b")
_QUOTES = "\"'“”‘’*_"
_ARTICLES = {"the", "a", "an"}
MAX_TOKENS = 12


@dataclass(frozen=True, slots=True)
class Found:
    item_id: str
    surface: str
    year: int | None
    start: int
    creator: str | None = None
    stance: Stance = "recommended"


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int
    key: str
    surface: str
    verdict: bool | None  # True accepted, False refused, None: accepted only beside a title


class Gazetteer:
    """Token-prefix index over catalog names."""

    def __init__(self, names: Iterable[tuple[str, str]]) -> None:
        self.keys: dict[str, set[str]] = {}
        self.prefixes: set[str] = set()
        for item_id, name in names:
            key = normalize_title(name)
            if not key or len(key.split()) > MAX_TOKENS:  # too long to find; its start is a
                self.prefixes.update(_token_prefixes(key.split()[:MAX_TOKENS]))  # prefix still
                continue
            # "L.A. Confidential" is also written "LA Confidential".
            for variant in {key, _SINGLE_LETTERS.sub(lambda m: m.group().replace(" ", ""), key)}:
                self.keys.setdefault(variant, set()).add(item_id)
                self.prefixes.update(_token_prefixes(variant.split()))

    @staticmethod
    def _needs_evidence(key: str) -> bool:
        """One-word titles ("Help", "Heat") and titles made only of common words."""
        tokens = key.split()
        return len(tokens) == 1 or all(t in COMMON_WORDS for t in tokens)

    @staticmethod
    def _refused(text: str, rev: str, start: int, end: int) -> bool:
        """Context that says a common-word candidate is not a title here."""
        back = len(text) - start
        return bool(
            _BY_BEFORE_REV.match(rev, back)  # "by Shirley Jackson": an author
            or _CAPITAL_AFTER.match(text, end)  # "Lost Connections": part of a longer title
            or _NAME_AFTER.match(text, end)  # "Queen of Mars"
            or _name_before(rev, back)  # "Robin Williams", "Prince of Space"
            or _OPEN_PAREN_REV.match(rev, back)  # "(Hitchcock)", "(Directors Cut)": a credit
            or _HEADING_AFTER.match(text, end)  # "Like:" heads a list
        )

    @staticmethod
    def _has_evidence(text: str, rev: str, start: int, end: int, surface: str) -> bool | None:
        """Quotes, a year or a list line; or capitalised words not at a sentence start. None:
        no evidence either way (a neighbouring title in a list may still vouch for it).

        `rev` is `text[::-1]`; `rev[back:]` is the text before the match, read backwards.
        """
        back = len(text) - start
        if _QUOTE_NEAR.match(rev, back) and _QUOTE_NEAR.match(text, end):
            return True
        if _YEAR_AFTER.match(text, end):
            return True
        if Gazetteer._refused(text, rev, start, end):
            return False
        if _BY_AFTER.match(text, end):
            return True
        if _LIST_LINE_REV.match(rev, back) and _NO_LETTER_TO_EOL.match(text, end):
            return True
        words = [w for w in re.findall(r"[^\W\d_]+", surface) if w.lower() not in _ARTICLES]
        capitalised = bool(words) and all(w[0].isupper() for w in words)
        sentence_start = _SENTENCE_START_REV.match(rev, back) is not None
        # "The Prestige technically fits": a capitalised article + title reads as a title even
        # where a sentence starts; a bare capitalised word there does not.
        titled = capitalised and surface.split()[0].lower() in _ARTICLES and len(words) >= 1
        if capitalised and surface[0].isupper() and (titled or not sentence_start):
            return True
        return None

    def _candidates(self, text: str, masked: str) -> list[_Candidate]:
        """Longest matches left to right, each with its evidence verdict."""
        tokens = [(m.start(), m.end(), normalize_title(m.group())) for m in _TOKEN.finditer(masked)]
        rev = masked[::-1]  # one copy per text, for the checks that read backwards
        found: list[_Candidate] = []
        i = 0
        while i < len(tokens):
            best = self._longest(tokens, i)
            if best is None:
                i += 1
                continue
            j, key = best
            span = masked[tokens[i][0] : tokens[j][1]]
            surface = span.strip(_QUOTES + ",.;:!?()")
            start = tokens[i][0] + max(span.find(surface), 0)
            end = start + len(surface)
            verdict: bool | None = True
            if self._needs_evidence(key):
                verdict = self._has_evidence(masked, rev, start, end, surface)
            if verdict is False:
                i += 1  # a shorter title may start inside the refused one
                continue
            found.append(_Candidate(start, end, key, surface, verdict))
            i = j + 1
        return found

    def _longest(self, tokens: list[tuple[int, int, str]], i: int) -> tuple[int, str] | None:
        """(last token index, key) of the longest catalog key starting at token `i`."""
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
        return best

    @staticmethod
    def _vouch_by_neighbours(masked: str, found: list[_Candidate]) -> list[_Candidate]:
        """Accept an undecided candidate that sits in a list with an accepted title
        ("Psycho, Casablanca, Rebecca", "Brick,Blood Simple", "Arrival and the dark knight")."""
        accepted = [c.verdict is True for c in found]
        # Pronouns and particles ("it", "up", "her") join a list only on a list line of their
        # own, never inside a comma-separated sentence.
        lone = [set(c.key.split()) <= FUNCTION_WORDS for c in found]
        changed = True
        while changed:
            changed = False
            for k, candidate in enumerate(found):
                if accepted[k]:
                    continue
                before = found[k - 1] if k > 0 else None
                after = found[k + 1] if k + 1 < len(found) else None
                left = (
                    before is not None
                    and accepted[k - 1]
                    and _listed(masked, before.end, candidate.start, lines=lone[k])
                )
                right = (
                    after is not None
                    and accepted[k + 1]
                    and _listed(masked, candidate.end, after.start, lines=lone[k])
                )
                if left or right:
                    accepted[k] = changed = True
        return [c for c, keep in zip(found, accepted, strict=True) if keep]

    def find(self, text: str) -> list[Found]:
        """Non-overlapping title matches, longest first, left to right."""
        masked = mask_markup(text)
        found: list[Found] = []
        for candidate in self._vouch_by_neighbours(masked, self._candidates(text, masked)):
            year = year_after(masked, candidate.end, titles=self.keys)
            by_match = _BY_AFTER.match(masked, candidate.end)
            creator = by_match.group("creator") if by_match else None
            stance = read_stance(masked, candidate.start, candidate.end)
            for item_id in sorted(self.keys[candidate.key]):
                found.append(
                    Found(item_id, candidate.surface, year, candidate.start, creator, stance)
                )
        return found


def _listed(masked: str, left_end: int, right_start: int, *, lines: bool = False) -> bool:
    """Whether only list punctuation (a comma, "and", a line break, a bullet, a year) separates
    two titles; with `lines`, only a line break counts as the separator."""
    gap = masked[left_end:right_start]
    separator = "\n" in gap if lines else bool(_LIST_SEPARATOR.search(gap))
    return separator and bool(_LIST_GAP.fullmatch(gap))


def _name_before(rev: str, back: int) -> bool:
    """A capitalised word (not one that only starts a sentence) just before position `back` of
    the reversed text."""
    found = _NAME_BEFORE_REV.match(rev, back)
    return found is not None and _SENTENCE_START_REV.match(rev, found.end()) is None


def _token_prefixes(tokens: list[str]) -> list[str]:
    return [" ".join(tokens[:n]) for n in range(1, len(tokens) + 1)]


def gazetteer_mentions(
    texts: pl.DataFrame, gazetteer: Gazetteer, *, role: str, kind: str | None
) -> pl.DataFrame:
    """Mentions from a frame of (dataset, request_id, response_id, responder_index, comment_id,
    text), each with its span in the text.

    A title named twice in one text is one mention; a key several items share ("Heat") is one
    mention too, resolved by grounding (year, then the `disambiguate` rules) or left ambiguous."""
    rows = []
    for dataset, request_id, response_id, responder_index, comment_id, text in texts.select(
        "dataset", "request_id", "response_id", "responder_index", "comment_id", "text"
    ).iter_rows():
        if not text:
            continue
        seen: set[str] = set()
        for position, hit in enumerate(gazetteer.find(text)):
            key = normalize_title(hit.surface)
            if key in seen:
                continue
            seen.add(key)
            prefix = mention_prefix(request_id, response_id, comment_id)
            # The requester's own titles are referenced, whatever the words around them.
            stance = hit.stance if role == "response" else "referenced"
            rows.append(
                (dataset, request_id, response_id, responder_index, f"{prefix}#g{position}",
                 role, kind, hit.surface, hit.year, hit.creator, stance,
                 comment_id, hit.start, hit.start + len(hit.surface))
            )  # fmt: skip
    schema = column_schema("mentions", *MENTION_FIELDS, "stance", *SPAN_FIELDS)
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit("gazetteer").alias("extractor"),
    )
