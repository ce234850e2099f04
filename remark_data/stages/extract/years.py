"""The year written after a title, for grounding ("Psycho (1960)" is not the 1998 remake)."""

from __future__ import annotations

import re
from collections.abc import Container

# Looser than the gazetteer's evidence (a year in brackets right after): a closing quote or
# emphasis may come first; on the same line the bracket may end the year with a dot or add a
# name after a comma ("(1963.)", "(1963, Wise)", not "(2019 rewatch)" or "(1920 x 1080)"), or
# the year may stand bare at the end of a clause ("The Wicker Man 1973", "Heat - 1995,"), not
# before more words ("Up 2000 times"), as a decade ("1980s") or a date ("2019.05.01"), after a
# comma or on the next line, or when it is a title itself ("Midsommar 1917": the next title).
_YEAR = r"((?:1[89]|20)\d{2})"
_YEAR_READ = re.compile(
    r"[\"'“”’*_]*+(?:\s*+[\(\[]\s*" + _YEAR + r"\s*[\)\]]"
    r"|[^\S\n]*+[\(\[][^\S\n]*" + _YEAR + r"(?:\.|[,;][^()\[\]\n]{1,40}?)[^\S\n]*[\)\]]"
    r"|[^\S\n]*[–—-]?[^\S\n]*" + _YEAR + r"(?=[^\S\n]*(?:$|[,;!?)\]\n]|\.(?!\d)|\s(?:and|or)\b)))"
)


def year_after(text: str, end: int, *, titles: Container[str]) -> int | None:
    """The year written right after `text[:end]`, if any; a bare number that is itself one of
    `titles` (normalised keys) is not read as a year.

    >>> year_after("The Wicker Man 1973.", 14, titles=set())
    1973
    >>> year_after("Midsommar 1917", 9, titles={"1917"}) is None
    True
    """
    found = _YEAR_READ.match(text, end)
    if found is None or (found.group(3) is not None and found.group(3) in titles):
        return None
    return int(found.group(1) or found.group(2) or found.group(3))
