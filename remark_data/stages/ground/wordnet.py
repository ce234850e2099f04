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
        self._synsets: dict[str, frozenset[tuple[str, str]]] = {}
        self._lemmas: dict[str, set[str]] = {pos: set() for pos in _POS}
        self._exceptions: dict[str, list[str]] = {}
        for pos in _POS:
            for line in (directory / f"index.{pos}").read_text(encoding="utf-8").splitlines():
                if line.startswith(" "):
                    continue  # the licence header
                fields = line.split()
                lemma, count = fields[0], int(fields[2])
                # Senses are listed most frequent first; rare ones ("chocolate", the colour,
                # is "coffee") are what pair unrelated answers.
                senses = fields[len(fields) - count :][:MAX_SENSES]
                offsets = frozenset((pos, offset) for offset in senses)
                self._synsets[lemma] = self._synsets.get(lemma, frozenset()) | offsets
                self._lemmas[pos].add(lemma)
            for line in (directory / f"{pos}.exc").read_text(encoding="utf-8").splitlines():
                inflected, *bases = line.split()
                self._exceptions.setdefault(inflected, []).extend(bases)

    @classmethod
    @lru_cache(maxsize=1)
    def load(cls) -> WordNet:
        """The process-wide instance (reading the index files takes about a second)."""
        return cls(models_dir() / "wordnet")

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - one long-lived instance per process
    def synsets(self, phrase: str) -> frozenset[tuple[str, str]]:
        """The synsets of a word or phrase and of its base forms ("mice" -> mouse)."""
        form = phrase.replace(" ", "_")
        bases = {form, *self._exceptions.get(form, ())}
        for pos, rules in _DETACHMENTS.items():
            bases |= {
                form[: -len(suffix)] + replacement
                for suffix, replacement in rules
                if form.endswith(suffix) and form[: -len(suffix)] + replacement in self._lemmas[pos]
            }
        found: frozenset[tuple[str, str]] = frozenset()
        for base in bases:
            found |= self._synsets.get(base, frozenset())
        return found

    @lru_cache(maxsize=1 << 16)  # noqa: B019 - one long-lived instance per process
    def senses(self, words: tuple[str, ...]) -> frozenset[object]:
        """Everything a part of `words` could pair on: its sub-phrases and their synsets. Two
        strings with no sense in common score 0, so `score` need not partition them."""
        found: set[object] = set()
        for start in range(len(words)):
            for end in range(start + 1, min(len(words), MAX_WORDS) + 1):
                phrase = " ".join(words[start:end])
                found.add(phrase)
                found |= self.synsets(phrase)
        return frozenset(found)

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
