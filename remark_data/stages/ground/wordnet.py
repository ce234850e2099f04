"""WordNet synonyms for the matcher's `wordnet` step: ProtoQA's official answer rule.

The ProtoQA evaluator (iesl/protoqa-evaluator, `wordnet_score`) drops stopwords, splits both
strings into every contiguous partition of their words, counts two parts as equal when they are
the same string or share a WordNet synset, and scores the best one-to-one pairing of parts over
the longer partition. Here a line matches an answer string when that score reaches
`min_score`; 1.0 (the default) means every part pairs up, so "car" never matches "car shop".

WordNet 3.0's index files (Princeton's database, Debian's `wordnet-base`) are read from
``$REMARK_MODELS_DIR/wordnet`` (``data/cache/models`` by default), where
``scripts/install_models.sh`` puts them after checking their sha256; nothing is downloaded at run
time. Only the index files are read: a synset is identified by its part of speech and offset.

>>> wordnet = WordNet.load()  # doctest: +SKIP
>>> wordnet.score("automobile", "car"), wordnet.score("car", "car shop")  # doctest: +SKIP
(1.0, 0.5)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations, pairwise
from pathlib import Path

from remark_data.errors import RemarkError

_POS = ("noun", "verb", "adj", "adv")
# WordNet's own detachment rules (morphy), per part of speech: suffix -> replacement.
_DETACHMENTS = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
             ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
             ("ing", "e"), ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}  # fmt: skip
#: A sub-phrase of a string: (start word, end word, the phrase and its synsets).
PhraseSenses = tuple[int, int, frozenset[object]]
_RULES_BY_SUFFIX: dict[str, list[tuple[str, str]]] = {}
for _pos, _rules in _DETACHMENTS.items():
    for _suffix, _replacement in _rules:
        _RULES_BY_SUFFIX.setdefault(_suffix, []).append((_pos, _replacement))
_SUFFIX_LENGTHS = sorted({len(suffix) for suffix in _RULES_BY_SUFFIX})
#: The senses of a word that count, per part of speech (WordNet lists them most frequent first).
MAX_SENSES = 1
#: Parts are built from at most this many content words (2^(n-1) partitions per string).
MAX_WORDS = 6


def models_dir() -> Path:
    """Where the optional matching data lives: ``$REMARK_MODELS_DIR`` or ``data/cache/models``."""
    return Path(os.environ.get("REMARK_MODELS_DIR") or "data/cache/models")


class WordNet:
    """Synset lookups over WordNet's index files, with morphy's base forms."""

    def __init__(self, directory: Path) -> None:
        if not (directory / "index.noun").is_file():
            raise RemarkError(
                f"WordNet data not found in {directory}: run `make models` "
                "(scripts/install_models.sh) or set REMARK_MODELS_DIR"
            )
        # Synsets are ints (offset * 4 + part of speech) in tuples: ~150k lemmas of them, kept
        # out of the garbage collector's sight (tuples of ints are untracked, frozensets are
        # not), so a full collection in a training process does not walk the index.
        self._synsets: dict[str, tuple[int, ...]] = {}
        self._lemmas: dict[str, set[str]] = {pos: set() for pos in _POS}
        self._exceptions: dict[str, tuple[str, ...]] = {}
        for pos_index, pos in enumerate(_POS):
            for line in (directory / f"index.{pos}").read_text(encoding="utf-8").splitlines():
                if line.startswith(" "):
                    continue  # the licence header
                fields = line.split()
                lemma, count = fields[0], int(fields[2])
                # Senses are listed most frequent first; rare ones ("chocolate", the colour,
                # is "coffee") are what pair unrelated answers.
                senses = fields[len(fields) - count :][:MAX_SENSES]
                offsets = tuple(int(offset) * 4 + pos_index for offset in senses)
                self._synsets[lemma] = self._synsets.get(lemma, ()) + offsets
                self._lemmas[pos].add(lemma)
            for line in (directory / f"{pos}.exc").read_text(encoding="utf-8").splitlines():
                inflected, *bases = line.split()
                self._exceptions[inflected] = (*self._exceptions.get(inflected, ()), *bases)
        # First words of multi-word entries ("ice_cream"): a phrase starting otherwise has no
        # synset, which spares most of a line's sub-phrases their base-form search.
        self._phrase_heads = frozenset(
            lemma.partition("_")[0] for lemma in (*self._synsets, *self._exceptions) if "_" in lemma
        )

    @classmethod
    @lru_cache(maxsize=1)
    def load(cls) -> WordNet:
        """The process-wide instance (reading the index files takes about a second)."""
        return cls(models_dir() / "wordnet")

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - one long-lived instance per process
    def synsets(self, phrase: str) -> frozenset[int]:
        """The synsets of a word or phrase and of its base forms ("mice" -> mouse)."""
        form = phrase.replace(" ", "_")
        if "_" in form and form.partition("_")[0] not in self._phrase_heads:
            return frozenset()
        bases = {form, *self._exceptions.get(form, ())}
        for length in _SUFFIX_LENGTHS:
            for pos, replacement in _RULES_BY_SUFFIX.get(form[-length:], ()):
                base = form[:-length] + replacement
                if base in self._lemmas[pos]:
                    bases.add(base)
        return frozenset(offset for base in bases for offset in self._synsets.get(base, ()))

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - one long-lived instance per process
    def phrase_senses(self, words: tuple[str, ...]) -> tuple[PhraseSenses, ...]:
        """(start, end, senses) of every sub-phrase a part of `words` can be: the phrase itself
        and its synsets."""
        found = []
        for start in range(min(len(words), MAX_WORDS)):
            for end in range(start + 1, min(len(words), MAX_WORDS) + 1):
                phrase = " ".join(words[start:end])
                found.append((start, end, frozenset((phrase, *self.synsets(phrase)))))
        return tuple(found)

    def senses(self, words: tuple[str, ...]) -> frozenset[object]:
        """Everything a part of `words` could pair on. Two strings with no sense in common
        score 0, so `score` need not partition them."""
        return frozenset().union(*(senses for _, _, senses in self.phrase_senses(words)))

    def covered(self, words: tuple[str, ...], senses: frozenset[object]) -> bool:
        """Whether each word (of the first `MAX_WORDS`) lies in a sub-phrase sharing a sense
        with `senses`: a cheap test that `score` cannot reach 1.0 without ("car shop" against
        "car": "shop" pairs with nothing)."""
        uncovered = set(range(min(len(words), MAX_WORDS)))
        for start, end, own in self.phrase_senses(words):
            if not own.isdisjoint(senses):
                uncovered.difference_update(range(start, end))
                if not uncovered:
                    return True
        return not uncovered

    def same(self, a: str, b: str) -> bool:
        """Two parts are equal when identical or sharing a synset."""
        return a == b or bool(self.synsets(a) & self.synsets(b))

    def score(
        self, a: Sequence[str] | str, b: Sequence[str] | str, *, at_least: float = 0.0
    ) -> float:
        """The official score of two content-word sequences: the best pairing of parts over
        every pair of partitions, divided by the longer partition's length. Partition pairs
        that cannot reach `at_least` are skipped (at 1.0, only equal part counts are paired),
        and a score below it may come back as 0.

        >>> WordNet.load().score("ice cream", "ice cream cone")  # doctest: +SKIP
        0.5
        """
        a_words = tuple(a.split()) if isinstance(a, str) else tuple(a)
        b_words = tuple(b.split()) if isinstance(b, str) else tuple(b)
        if not a_words or not b_words:
            return 0.0
        best = 0.0
        for a_parts in partitions(a_words[:MAX_WORDS]):
            for b_parts in partitions(b_words[:MAX_WORDS]):
                shorter, longer = sorted((len(a_parts), len(b_parts)))
                if shorter <= longer * max(best, at_least - 1e-9):
                    continue  # cannot beat the best score so far, or reach `at_least`
                best = max(best, self._pairing(a_parts, b_parts) / longer)
                if best == 1.0:
                    return best
        return best

    def _pairing(self, a_parts: tuple[str, ...], b_parts: tuple[str, ...]) -> int:
        """The size of a maximum one-to-one pairing of equal parts (Kuhn's augmenting paths)."""
        partner: dict[int, int] = {}

        def augment(i: int, visited: set[int]) -> bool:
            for j, b_part in enumerate(b_parts):
                if j not in visited and self.same(a_parts[i], b_part):
                    visited.add(j)
                    if j not in partner or augment(partner[j], visited):
                        partner[j] = i
                        return True
            return False

        return sum(augment(i, set()) for i in range(len(a_parts)))


@lru_cache(maxsize=1 << 14)
def partitions(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every split of `words` into contiguous parts.

    >>> partitions(("ice", "cream", "cone"))
    [('ice cream cone',), ('ice', 'cream cone'), ('ice cream', 'cone'), ('ice', 'cream', 'cone')]
    """
    return [
        tuple(" ".join(words[start:end]) for start, end in bounds)
        for bounds in _partition_bounds(len(words))
    ]


@lru_cache(maxsize=MAX_WORDS + 1)
def _partition_bounds(n_words: int) -> list[list[tuple[int, int]]]:
    found = []
    for n_cuts in range(n_words):
        for cuts in combinations(range(1, n_words), n_cuts):
            bounds = (0, *cuts, n_words)
            found.append(list(pairwise(bounds)))
    return found
