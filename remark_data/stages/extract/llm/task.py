"""What one kind of LLM extraction asks and how its replies are read: the prompt and schema
(`request`), reply parsing (`parse`), the guard on each text's answer (`result`), what keys
the cache (`key_parts`) and the part of the task a Ray worker needs (`for_texts`).
`TitleTask` extracts titles from comments; `hybrid.HybridTask` checks
a gazetteer's candidates and adds what it missed. The client, cache and retries are shared."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from remark_data.stages.extract.llm.schema import (
    BATCH_NOTE,
    BATCH_SCHEMA,
    SCHEMA,
    ExtractedTitle,
    chat_request,
    kind_label,
    title_in_text,
    titles_per_text,
)

if TYPE_CHECKING:
    from remark_data.config import LLMSpec


class LLMTask(Protocol):
    def key_parts(self, text: str, *, spec: LLMSpec) -> list[Any]: ...

    def batchable(self, text: str, *, spec: LLMSpec) -> bool: ...

    def request(self, texts: Sequence[str]) -> tuple[list[dict[str, str]], dict[str, Any]]: ...

    def parse(self, raw: str, *, n_texts: int) -> list[Any]: ...

    def result(self, text: str, parsed: Any) -> dict[str, Any]: ...

    def for_texts(self, texts: Iterable[str]) -> LLMTask: ...


@dataclass(frozen=True)
class TitleTask:
    """Every title of `kinds` named in a comment, with year, creator, kind and stance."""

    kinds: Sequence[str]

    def key_parts(self, text: str, *, spec: LLMSpec) -> list[Any]:
        # A batched text is asked with another prompt and schema: it is cached under those.
        batched = self.batchable(text, spec=spec)
        return [
            BATCH_NOTE if batched else "",
            kind_label(self.kinds),
            BATCH_SCHEMA if batched else SCHEMA,
        ]

    def batchable(self, text: str, *, spec: LLMSpec) -> bool:
        return 0 < len(text) <= spec.batch_chars

    def request(self, texts: Sequence[str]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        return chat_request(texts, kinds=self.kinds)

    def parse(self, raw: str, *, n_texts: int) -> list[Any]:
        return titles_per_text(raw, n_texts=n_texts)

    def result(self, text: str, parsed: list[ExtractedTitle]) -> dict[str, Any]:
        """The titles found in the text; the others are dropped and counted."""
        kept = [t for t in parsed if title_in_text(t.title, text)]
        return {"titles": [t.model_dump() for t in kept], "dropped": len(parsed) - len(kept)}

    def for_texts(self, texts: Iterable[str]) -> TitleTask:
        """What a Ray worker needs to answer `texts`: this task, which holds no text."""
        return self
