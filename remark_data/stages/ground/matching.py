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
from collections.abc import Iterable
from functools import lru_cache

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


def split_title_year(text: str) -> tuple[str, int | None]:
    """Split a trailing "(YYYY)" or "[YYYY]" off a title."""
    found = _YEAR_SUFFIX.match(text)
    if found is None:
        return text.strip(), None
    return found["title"], int(found["year"])


class TitleMatcher:
    """Grounds (title, year) pairs to catalog item ids by normalised title and year tolerance.

    A title whose key matches several items is resolved to the one with the nearest year within
    `year_tolerance`; with no year given it matches only when the key is unique. Results are cached
    in-process because generated lists repeat the same titles across a training run.
    """

    def __init__(
        self,
        items: Iterable[tuple[str, str, int | None]],
        *,
        year_tolerance: int = 2,
        aliases: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.year_tolerance = year_tolerance
        self._by_key: dict[str, list[tuple[int | None, str]]] = {}
        for item_id, title, year in items:
            self._by_key.setdefault(normalize_title(title), []).append((year, item_id))
        for item_id, alias in aliases:
            self._by_key.setdefault(normalize_title(alias), []).append((None, item_id))
        self._cache: dict[tuple[str, int | None], str | None] = {}

    def match(self, title: str, year: int | None = None) -> str | None:
        """The item id for `title` (and `year`), or None when unmatched or ambiguous."""
        cache_key = (title, year)
        if cache_key in self._cache:
            return self._cache[cache_key]
        result = self._resolve(self._by_key.get(normalize_title(title), ()), year)
        self._cache[cache_key] = result
        return result

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
