"""Title normalisation and the catalog matcher, shared by the ground stage and the rewards.

Pure Python with no heavy imports, so a trainer's reward function can use it cheaply.

Examples
--------
>>> normalize_title("The Lord of the Rings: The Fellowship of the Ring")
'lord of the rings the fellowship of the ring'
>>> normalize_title("Amélie")
'amelie'
>>> split_title_year("Arrival (2016)")
('Arrival', 2016)
>>> matcher = TitleMatcher([("m1", "Arrival", 2016), ("m2", "Heat", 1995)])
>>> matcher.match("arrival", 2017)
'm1'
>>> matcher.match("Heat", 2003) is None
True
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Literal, get_args

#: The matcher's steps, tried in this order until one finds an item: the normalised key, a
#: lemma key without pronouns and articles ("his birthday" = "birthday", "fights" = "fight"),
#: and an edit-distance match on lemma keys guarded against subsets ("car" is not "car shop").
MatchStep = Literal["normalized", "lemma", "fuzzy"]
MATCH_STEPS: tuple[MatchStep, ...] = get_args(MatchStep)
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "his",
        "her",
        "their",
        "your",
        "my",
        "our",
        "its",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "it",
        "them",
        "him",
        "me",
        "us",
        "to",
        "of",
        "for",
        "some",
        "any",
        "one",
        "ones",
    ]
)

_ARTICLES = ("the", "a", "an")
_TRAILING_ARTICLE = re.compile(r",\s*(the|a|an)$")
_YEAR_SUFFIX = re.compile(r"^\s*(?P<title>.*?)\s*[\(\[](?P<year>\d{4})[\)\]]\s*$")
_NON_WORD = re.compile(r"[^\w\s]")
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=1 << 18)
def normalize_title(text: str) -> str:
    """A matching key: unescaped, accent-free, lower case, no punctuation or leading article.

    "Title, The" (MovieLens) and "The Title" give the same key; "&" reads as "and".
    """
    text = html.unescape(text)
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold().strip()
    text = _TRAILING_ARTICLE.sub("", text)
    text = text.replace("&", " and ").replace("'", "").replace("\u2019", "")
    text = _SPACE.sub(" ", _NON_WORD.sub(" ", text)).strip()
    first, _, rest = text.partition(" ")
    if first in _ARTICLES and rest:
        text = rest
    return text


@lru_cache(maxsize=1 << 18)
def lemma_key(text: str) -> str:
    """The normalised key's words, lemmatised, without pronouns and articles.

    >>> lemma_key("His birthday"), lemma_key("they fight"), lemma_key("Your likes")
    ('birthday', 'fight', 'like')
    """
    import simplemma  # loads its English data on first use, so only when the step is on

    words = [w for w in normalize_title(text).split() if w not in _STOPWORDS]
    return " ".join(simplemma.lemmatize(w, lang="en") for w in words)


def split_title_year(text: str) -> tuple[str, int | None]:
    """Split a trailing "(YYYY)" or "[YYYY]" off a title."""
    found = _YEAR_SUFFIX.match(text)
    if found is None:
        return text.strip(), None
    return found["title"], int(found["year"])


class TitleMatcher:
    """Grounds (title, year) pairs to catalog item ids by normalised title and year tolerance.

    A title whose key matches several items is resolved to the one with the nearest year within
    `year_tolerance`; with no year given it matches only when the key is unique. `steps` beyond
    `normalized` (`MatchStep`) are tried only for a title no earlier step has a key for (an
    ambiguous key stays ambiguous); `matched_by` counts the titles each step matched. Results are
    cached in-process because generated lists repeat the same titles across a training run.

    >>> answers = TitleMatcher([("c1", "birthday", None), ("c2", "car", None)],
    ...                        aliases=[("c2", "automobile")], steps=MATCH_STEPS)
    >>> [answers.match(t) for t in ("Birthday", "his birthdays", "automobil", "car shop")]
    ['c1', 'c1', 'c2', None]
    >>> answers.matched_by
    {'normalized': 1, 'lemma': 1, 'fuzzy': 1}
    """

    def __init__(
        self,
        items: Iterable[tuple[str, str, int | None]],
        *,
        year_tolerance: int = 2,
        aliases: Iterable[tuple[str, str]] = (),
        steps: Sequence[MatchStep] = ("normalized",),
        fuzzy_cutoff: float = 85.0,
    ) -> None:
        self.year_tolerance = year_tolerance
        self.steps = tuple(steps)
        self.fuzzy_cutoff = fuzzy_cutoff
        self.matched_by: dict[str, int] = dict.fromkeys(self.steps, 0)
        self._by_key: dict[str, list[tuple[int | None, str]]] = {}
        names = [(item_id, title, year) for item_id, title, year in items]
        names += [(item_id, alias, None) for item_id, alias in aliases]
        for item_id, name, year in names:
            self._by_key.setdefault(normalize_title(name), []).append((year, item_id))
        self._by_lemma: dict[str, set[str]] = {}
        if set(self.steps) - {"normalized"}:
            for item_id, name, _ in names:
                if key := lemma_key(name):
                    self._by_lemma.setdefault(key, set()).add(item_id)
        self._cache: dict[tuple[str, int | None], str | None] = {}

    def match(self, title: str, year: int | None = None) -> str | None:
        """The item id for `title` (and `year`), or None when unmatched or ambiguous."""
        cache_key = (title, year)
        if cache_key in self._cache:
            return self._cache[cache_key]
        result, step = None, None
        candidates = self._by_key.get(normalize_title(title), ())
        if candidates:
            result, step = self._resolve(candidates, year), "normalized"
        elif "lemma" in self.steps or "fuzzy" in self.steps:
            key = lemma_key(title)
            if "lemma" in self.steps and key in self._by_lemma:
                ids = self._by_lemma[key]
                result, step = (next(iter(ids)) if len(ids) == 1 else None), "lemma"
            elif "fuzzy" in self.steps and key:
                result, step = self._closest(key), "fuzzy"
        if result is not None and step is not None:
            self.matched_by[step] += 1
        self._cache[cache_key] = result
        return result

    def _closest(self, key: str) -> str | None:
        """The one item whose lemma key is within the fuzzy cutoff, unless either key's words
        are a subset of the other's (a one-word answer inside a longer line is not a match)."""
        from rapidfuzz import fuzz

        words = set(key.split())
        found = {
            item
            for name, items in self._by_lemma.items()
            if fuzz.ratio(key, name) >= self.fuzzy_cutoff
            and not (words < set(name.split()) or set(name.split()) < words)
            for item in items
        }
        return next(iter(found)) if len(found) == 1 else None

    def _resolve(
        self, candidates: Iterable[tuple[int | None, str]], year: int | None
    ) -> str | None:
        candidates = list(candidates)
        ids = {item_id for _, item_id in candidates}
        if year is None:
            return next(iter(ids)) if len(ids) == 1 else None
        best: tuple[int, str] | None = None
        for item_year, item_id in candidates:
            distance = 0 if item_year is None else abs(item_year - year)
            if distance <= self.year_tolerance and (best is None or distance < best[0]):
                best = (distance, item_id)
        return None if best is None else best[1]
