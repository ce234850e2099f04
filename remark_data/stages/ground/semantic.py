"""Sentence embeddings for the matcher's optional `semantic` step: paraphrases with no shared
word ("its roots" for age) that no string rule reaches.

The model is all-MiniLM-L6-v2 (sentence-transformers), read from
``$REMARK_MODELS_DIR/all-minilm-l6-v2`` where ``scripts/install_models.sh`` unpacks it after
checking its sha256; nothing is downloaded at run time. It runs on the CPU. sentence-transformers
(and torch) are imported only when the step is on: ``pip install 'remark-data[semantic]'``.
Vectors are cached per text for the life of the process, so a training run embeds each distinct
generated line once; `embed` takes whole batches, which is where the model is fast.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from remark_data.errors import RemarkError
from remark_data.stages.ground.wordnet import models_dir

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = "all-minilm-l6-v2"


class Embedder:
    """Unit-length sentence vectors, cached per text."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self._vectors: dict[str, np.ndarray] = {}

    @classmethod
    @lru_cache(maxsize=1)
    def load(cls) -> Embedder:
        """The process-wide model (loading takes a few seconds)."""
        directory = models_dir() / MODEL_NAME
        if not (directory / "model.safetensors").is_file():
            raise RemarkError(
                f"the semantic step's model is not in {directory}: run `make models` "
                "(scripts/install_models.sh) or set REMARK_MODELS_DIR"
            )
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as error:
            raise RemarkError(
                "the semantic step needs sentence-transformers: pip install 'remark-data[semantic]'"
            ) from error
        return cls(SentenceTransformer(str(directory), device="cpu", local_files_only=True))

    def embed(self, texts: Sequence[str], *, batch_size: int = 256) -> np.ndarray:
        """One row per text; texts not seen before are encoded in batches."""
        import numpy as np

        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        if len(self._vectors) > 1_000_000:
            self._vectors.clear()
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if new:
            vectors = self._model.encode(
                new, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
            self._vectors.update(zip(new, vectors, strict=True))
        return np.stack([self._vectors[t] for t in texts])


def ranked_items(
    names: Sequence[tuple[str, str]], similarity: Iterable[float]
) -> tuple[str, float, float]:
    """The item whose most similar name is the most similar, that similarity, and its lead over
    every other item's most similar name (1 + its similarity when it is the only item).

    >>> ranked_items([("a", "age"), ("a", "how old"), ("j", "job")], [0.5, 0.8, 0.6])
    ('a', 0.8, 0.2...)
    """
    best_by_item: dict[str, float] = {}
    for (item_id, _), value in zip(names, similarity, strict=True):
        best_by_item[item_id] = max(value, best_by_item.get(item_id, -1.0))
    ranked = sorted(best_by_item.items(), key=lambda pair: -pair[1])
    best_id, best = ranked[0]
    return best_id, best, best - (ranked[1][1] if len(ranked) > 1 else -1.0)


def own_words(
    by_lemma_key: Mapping[str, Iterable[str]], request_words: Iterable[str]
) -> dict[str, frozenset[str]]:
    """Per item, the words of its names' lemma keys that no other item's names hold and that
    are not `request_words`: the words that, shared with a line, point at that item alone.

    >>> words = own_words({"calm": ["c1"], "cat cute": ["c2"], "cat clean": ["c3"]}, ["clean"])
    >>> {item_id: sorted(own) for item_id, own in words.items()}
    {'c1': ['calm'], 'c2': ['cute'], 'c3': []}
    """
    words_by_item: dict[str, set[str]] = {}
    for key, item_ids in by_lemma_key.items():
        for item_id in item_ids:
            words_by_item.setdefault(item_id, set()).update(key.split())
    holders = Counter(word for words in words_by_item.values() for word in words)
    shared = {word for word, n in holders.items() if n > 1} | set(request_words)
    return {item_id: frozenset(words - shared) for item_id, words in words_by_item.items()}
