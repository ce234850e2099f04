"""Parse a generated recommendation list into ranked items, keeping ranks aligned.

Every non-blank line is one rank. A line that yields no title is an empty rank (`None`), never
dropped: dropping it, as Rank-GRPO's parser does, would shift credit to the wrong ranks.

Examples
--------
>>> parse_list("1. Arrival (2016)\\n2) Heat\\n- \\"Dune\\" by Frank Herbert\\n* (2001)")
[ListItem(title='Arrival', year=2016, creator=None), ListItem(title='Heat', year=None, creator=None), ListItem(title='Dune', year=None, creator='Frank Herbert'), None]
"""  # noqa: E501

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)\]:](?:\s+|$)|#\d+\s*|[-*•·–—>]+\s*)")
# 3-digit years exist in real catalogs (Rank-GRPO's "The Wall (201)"); keep them matchable.
_YEAR = re.compile(r"\s*[\(\[]\s*(\d{3,4})\s*[\)\]]")
_BY = re.compile(r"\s+by\s+(.+)$", re.IGNORECASE)
_QUOTES = "\"'“”‘’*_`"
_MAX_TITLE = 200


class ListItem(NamedTuple):
    title: str
    year: int | None
    creator: str | None


@lru_cache(maxsize=1 << 16)
def parse_line(line: str) -> ListItem | None:
    """One list line -> (title, year, creator), or None when no title is left.

    >>> parse_line("3. The Thing (1982) - a classic")
    ListItem(title='The Thing', year=1982, creator=None)
    """
    # Cached as written (a training run sees the same lines again) and without the rank
    # marker: "3. car" and "7. car" parse once between them.
    return parse_entry(_MARKER.sub("", line, count=1).strip())


@lru_cache(maxsize=1 << 16)
def parse_entry(text: str) -> ListItem | None:
    """`parse_line` for a line without its rank marker."""
    year = None
    found = _YEAR.search(text)
    if found is not None:
        year = int(found.group(1))
        # Whatever follows the year is commentary ("(1982) - a classic").
        text = text[: found.start()]
    creator = None
    by = _BY.search(text)
    if by is not None and found is None:
        creator = by.group(1).strip(_QUOTES + " .") or None
        text = text[: by.start()]
    title = text.strip().strip(_QUOTES).strip(" :;,.-").strip(_QUOTES).strip()
    if not title or len(title) > _MAX_TITLE or not any(ch.isalnum() for ch in title):
        return None
    return ListItem(title, year, creator)


def parse_list(text: str, *, max_ranks: int | None = None) -> list[ListItem | None]:
    """All ranks of a generated list; `max_ranks` truncates to the first K ranks."""
    ranks = [parse_line(line) for line in text.splitlines() if line.strip()]
    return ranks if max_ranks is None else ranks[:max_ranks]
