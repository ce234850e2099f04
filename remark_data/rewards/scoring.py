"""From raw completion text to per-rank rewards: parse → ground → reward.

Grounding goes through the same `TitleMatcher` as the ground stage. With a catalog, titles ground
to catalog ids; without one, a row's own label items (union and seen titles) form a small matcher,
so trainer adapters can score self-contained rows. Items outside a row's labels earn 0 either
way, so both give the same rewards whenever the catalog has no two items a title could mean.

Examples
--------
>>> row = {"responder_item_ids": [["m1"], ["m1", "m2"]], "seen_item_ids": [],
...        "items": [{"item_id": "m1", "title": "Arrival", "year": 2016, "p_hat": 1.0},
...                  {"item_id": "m2", "title": "Heat", "year": 1995, "p_hat": 0.5}]}
>>> ListScorer().rewards("1. Heat (1995)\\nnonsense line\\n3. Arrival (2017)", row)
[1.0, 0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from remark_data.rewards.core import RequestLabels, RewardKind, Shape, rank_rewards
from remark_data.rewards.parse import parse_list
from remark_data.stages.ground.matching import TitleMatcher, normalize_title

Row = Mapping[str, Any]


def check_max_ranks(max_ranks: object) -> None:
    """ValueError unless K is a positive int (bool is an int, and not a rank count)."""
    if isinstance(max_ranks, bool) or not isinstance(max_ranks, int) or max_ranks < 1:
        raise ValueError(f"max_ranks must be a positive integer, got {max_ranks!r}")


class ListScorer:
    """Scores generated lists against label rows. Caches matchers and parsed labels per row."""

    def __init__(
        self,
        *,
        catalog: TitleMatcher | None = None,
        max_ranks: int | None = 20,
        year_tolerance: int = 2,
    ) -> None:
        """`max_ranks` cuts lists to their first K ranks; None keeps every rank."""
        if max_ranks is not None:
            check_max_ranks(max_ranks)
        self.catalog = catalog
        self.max_ranks = max_ranks
        self.year_tolerance = year_tolerance
        self._rows: dict[str, tuple[TitleMatcher, RequestLabels, frozenset[str]]] = {}

    def _prepare(self, row: Row) -> tuple[TitleMatcher, RequestLabels, frozenset[str]]:
        # Cached by request id only: an id() of a short-lived row dict can be reused by another.
        key = row.get("request_id")
        cached = self._rows.get(key) if key is not None else None
        if cached is not None:
            return cached
        labels = RequestLabels.from_row(row)
        items = row.get("items") or []
        matcher = self.catalog or TitleMatcher(
            ((i["item_id"], i["title"], i.get("year")) for i in items),
            year_tolerance=self.year_tolerance,
            aliases=((i["item_id"], a) for i in items for a in i.get("aliases") or ()),
            steps=row.get("match_steps") or ("normalized",),
            context=prompt_text(row.get("prompt")),
        )
        seen_keys = frozenset(normalize_title(t) for t in row.get("seen_titles") or ())
        prepared = (matcher, labels, seen_keys)
        if key is not None:
            if len(self._rows) > 100_000:
                self._rows.clear()
            self._rows[key] = prepared
        return prepared

    def _ground_ranks(self, text: str, row: Row) -> tuple[list[str | None], RequestLabels]:
        matcher, labels, seen_keys = self._prepare(row)
        item_ids: list[str | None] = []
        seen_hits: set[str] = set()
        parsed = parse_list(text, max_ranks=self.max_ranks)
        matcher.prefetch([item.title for item in parsed if item is not None])
        for item in parsed:
            item_id = None
            if item is not None:
                item_id = matcher.match(item.title, item.year)
                if item_id is None and item.creator:  # "Stand by Me": a title, not title + author
                    item_id = matcher.match(f"{item.title} by {item.creator}", item.year)
                if item_id is not None and seen_keys and normalize_title(item.title) in seen_keys:
                    seen_hits.add(item_id)
            item_ids.append(item_id)
        if seen_hits:
            labels = replace(labels, seen=labels.seen | seen_hits)
        return item_ids, labels

    @property
    def matched_by(self) -> dict[str, int]:
        """Lines each matcher step has matched so far, over every row's matcher."""
        counts: dict[str, int] = {}
        for matcher in {id(m): m for m, _, _ in self._rows.values()}.values():
            for step, n in matcher.matched_by.items():
                counts[step] = counts.get(step, 0) + n
        return counts

    def ground(self, text: str, row: Row) -> list[str | None]:
        """Item ids per rank (None for unparseable or ungrounded ranks)."""
        return self._ground_ranks(text, row)[0]

    def rewards(
        self,
        text: str,
        row: Row,
        *,
        reward: RewardKind = "union",
        shape: Shape = "exp_inf",
        responder: int | None = None,
    ) -> list[float]:
        """Per-rank rewards of one completion against one label row; seen titles never pay."""
        item_ids, labels = self._ground_ranks(text, row)
        return rank_rewards(item_ids, labels, reward=reward, shape=shape, responder=responder)


def prompt_text(prompt: str | Sequence[Mapping[str, Any]] | None) -> str:
    """The request text of a row's `prompt`: a string, or chat messages (their user turns).

    >>> prompt_text([{"role": "user", "content": "Name a pet."}])
    'Name a pet.'
    """
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    return "\n".join(str(m.get("content", "")) for m in prompt if m.get("role", "user") == "user")


def completion_text(completion: str | Sequence[Mapping[str, Any]]) -> str:
    """The text of a completion in TRL's standard (str) or conversational (messages) format."""
    if isinstance(completion, str):
        return completion
    return "\n".join(
        str(m.get("content", "")) for m in completion if m.get("role", "assistant") == "assistant"
    )
