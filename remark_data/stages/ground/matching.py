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

# long-module: the matcher chain is one class whose steps share the name indexes it builds.
from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Literal, get_args

#: The matcher's steps, tried in this order until one decides: the normalised key; a lemma key
#: without pronouns and articles ("his birthday" = "birthday", "fights" = "fight"); WordNet
#: synonyms by ProtoQA's official rule on lemma keys ("automobile" = "car"; `wordnet.py`); an
#: edit-distance match on lemma keys guarded against subsets ("car" is not "car shop"); and
#: sentence embeddings for paraphrases (`semantic.py`, optional: it needs torch).
MatchStep = Literal["normalized", "lemma", "wordnet", "fuzzy", "semantic"]
MATCH_STEPS: tuple[MatchStep, ...] = get_args(MatchStep)
# fmt: off
_STOPWORDS = frozenset([
    "a", "an", "the", "his", "her", "their", "your", "my", "our", "its", "i", "you", "he", "she",
    "we", "they", "it", "them", "him", "me", "us", "to", "of", "for", "some", "any", "one", "ones",
])
# fmt: on

_NamesBySense = dict[object, list[tuple[str, tuple[str, ...], frozenset[object]]]]
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
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():  # most titles are: skip the per-character accent pass
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = text.casefold().strip()
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
    words = [w for w in normalize_title(text).split() if w not in _STOPWORDS]
    return " ".join(map(lemma, words))


@lru_cache(maxsize=1 << 16)
def lemma(word: str) -> str:
    """One word's lemma, lower case (simplemma capitalises proper nouns: "Virginia").

    >>> lemma("fights")
    'fight'
    """
    import simplemma  # loads its English data on first use, so only when the step is on

    return simplemma.lemmatize(word, lang="en").casefold()


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
    `normalized` (`MatchStep`) are tried in order only for a title no earlier step decided (a
    step that finds several items decides: the title stays ambiguous); `matched_by` counts the
    titles each step matched. Results are cached in-process because generated lists repeat the
    same titles across a training run. `context` is the request's text (a ProtoQA question): the
    semantic step does not count its words as evidence that a title and a name agree.

    >>> answers = TitleMatcher([("c1", "birthday", None), ("c2", "car", None)],
    ...                        aliases=[("c2", "automobile")],
    ...                        steps=("normalized", "lemma", "fuzzy"))
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
        fuzzy_min_word: int = 6,
        wordnet_min_score: float = 1.0,
        semantic_min_similarity: float = 0.65,
        semantic_min_margin: float = 0.1,
        semantic_supported_similarity: float = 0.55,
        semantic_supported_margin: float = 0.05,
        context: str = "",
    ) -> None:
        self.year_tolerance = year_tolerance
        self.steps = tuple(steps)
        self.fuzzy_min_word = fuzzy_min_word
        self.wordnet_min_score = wordnet_min_score
        self.semantic_min_similarity = semantic_min_similarity
        self.semantic_min_margin = semantic_min_margin
        self.semantic_supported_similarity = semantic_supported_similarity
        self.semantic_supported_margin = semantic_supported_margin
        self.context = context
        self.matched_by: dict[str, int] = dict.fromkeys(self.steps, 0)
        self._by_key: dict[str, list[tuple[int | None, str]]] = {}
        names = [(item_id, title, year) for item_id, title, year in items]
        names += [(item_id, alias, None) for item_id, alias in aliases]
        for item_id, name, year in names:
            self._by_key.setdefault(normalize_title(name), []).append((year, item_id))
        self._by_lemma: dict[str, set[str]] = {}
        if len(self.steps) > 1:
            for item_id, name, _ in names:
                if key := lemma_key(name):
                    self._by_lemma.setdefault(key, set()).add(item_id)
        self._names = [(item_id, name) for item_id, name, _ in names]
        # Per-step views of the names, built on a step's first use.
        self._names_by_sense: _NamesBySense | None = None
        self._by_shape: dict[tuple[int, str], list[tuple[str, str, tuple[str, ...]]]] | None = None
        self._name_vectors: Any = None
        self._own_words: dict[str, frozenset[str]] | None = None
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
        elif len(self.steps) > 1 and (key := lemma_key(title)):
            for step in self.steps[1:]:
                decided = self._STEPS[step](self, title, key)
                if decided:
                    result = next(iter(decided)) if len(decided) == 1 else None
                    break
        if result is not None and step is not None:
            self.matched_by[step] += 1
        self._cache[cache_key] = result
        return result

    def prefetch(self, titles: Sequence[str]) -> None:
        """Embeds, in one batch, the titles the semantic step may see (a no-op without it)."""
        if "semantic" in self.steps:
            from remark_data.stages.ground.semantic import Embedder

            Embedder.load().embed([t for t in titles if normalize_title(t) not in self._by_key])

    def _lemma(self, title: str, key: str) -> set[str] | None:
        return self._by_lemma.get(key)

    def _wordnet(self, title: str, key: str) -> set[str] | None:
        """The items whose lemma keys score best by ProtoQA's WordNet rule, if good enough."""
        from remark_data.stages.ground.wordnet import WordNet

        wordnet = WordNet.load()
        if self._names_by_sense is None:
            self._names_by_sense = by_sense = _NamesBySense()
            for name in self._by_lemma:
                name_words = tuple(name.split())
                name_senses = wordnet.senses(name_words)
                for sense in name_senses:
                    by_sense.setdefault(sense, []).append((name, name_words, name_senses))
        words = tuple(key.split())
        senses = wordnet.senses(words)
        # Only names sharing a sense can score; at a full score every word of both must pair.
        candidates = {
            name: (name_words, name_senses)
            for sense in senses
            for name, name_words, name_senses in self._names_by_sense.get(sense, ())
        }
        full = self.wordnet_min_score >= 1.0
        scores = {
            name: wordnet.score(words, name_words, at_least=self.wordnet_min_score)
            for name, (name_words, name_senses) in candidates.items()
            if not full
            or (wordnet.covered(words, name_senses) and wordnet.covered(name_words, senses))
        }
        best = max(scores.values(), default=0.0)
        if best < self.wordnet_min_score:
            return None
        return {
            item for name, score in scores.items() if score == best for item in self._by_lemma[name]
        }

    def _fuzzy(self, title: str, key: str) -> set[str] | None:
        """The items whose lemma key differs from the title's only as a typo does: by spaces
        ("fire truck", "firetruck"), or by one edit (Damerau-Levenshtein) in one word of at
        least `fuzzy_min_word` letters that keeps its first letter ("west virgina"). Other
        differences make other answers ("bear", "beard"; "baseball", "basketball"; "8 am",
        "9 am"; "height", "weight")."""

        if self._by_shape is None:
            self._by_shape = {}
            for name in self._by_lemma:
                name_words = tuple(name.split())
                joined_name = "".join(name_words)
                shape = (len(joined_name), joined_name[:1])
                self._by_shape.setdefault(shape, []).append((name, joined_name, name_words))
        words = tuple(key.split())
        joined = "".join(words)
        found: set[str] = set()
        # Every typo kept here leaves the first letter and changes the length by one at most.
        for length in (len(joined) - 1, len(joined), len(joined) + 1):
            for name, joined_name, name_words in self._by_shape.get((length, joined[:1]), ()):
                if joined_name == joined:
                    found |= self._by_lemma[name]
                elif len(name_words) == len(words):
                    differing = [(a, b) for a, b in zip(words, name_words, strict=True) if a != b]
                    if len(differing) == 1 and self._is_typo(*differing[0]):
                        found |= self._by_lemma[name]
        return found or None

    def _is_typo(self, a: str, b: str) -> bool:
        from rapidfuzz.distance import DamerauLevenshtein

        return (
            min(len(a), len(b)) >= self.fuzzy_min_word
            and a[0] == b[0]
            and DamerauLevenshtein.distance(a, b) == 1
        )

    def _semantic(self, title: str, key: str) -> set[str] | None:
        """The item of the most similar name by sentence embedding, if similar enough and clearly
        ahead of every other item; or less so, if the title shares a word with its names that
        no other item's names and no request word (`context`) hold: two signals agreeing."""
        from remark_data.stages.ground.semantic import Embedder, own_words, ranked_items

        if not self._names:
            return None
        embedder = Embedder.load()
        if self._name_vectors is None:
            self._name_vectors = embedder.embed([name for _, name in self._names])
        similarity = self._name_vectors @ embedder.embed([title])[0]
        best_id, best, margin = ranked_items(self._names, similarity.tolist())
        if best >= self.semantic_min_similarity and margin >= self.semantic_min_margin:
            return {best_id}
        if best < self.semantic_supported_similarity or margin < self.semantic_supported_margin:
            return None
        if self._own_words is None:
            self._own_words = own_words(self._by_lemma, lemma_key(self.context).split())
        own = self._own_words.get(best_id, frozenset())
        return None if own.isdisjoint(key.split()) else {best_id}

    _STEPS: ClassVar[dict[str, Callable[[TitleMatcher, str, str], set[str] | None]]] = {
        "lemma": _lemma,
        "wordnet": _wordnet,
        "fuzzy": _fuzzy,
        "semantic": _semantic,
    }

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
