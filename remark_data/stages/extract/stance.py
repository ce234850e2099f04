"""Stance: how a comment uses a title it names (recommended / referenced / negative).

Only recommended mentions enter the union (DESIGN.md). Cues are read in a bounded window on the
title's line, so reading stance stays linear in the text.
"""

from __future__ import annotations

import re

from remark_data.schemas import Stance

# Stance cues, read in a window before / after a title on its line (`read_stance`).
_STANCE_WINDOW = 60
_REFERENCED_BEFORE = re.compile(
    r"(?:^\s*>[^\n]*"  # a quoted line: the commenter quotes the request
    r"|\bif\s+you\s+(?:\w+\s+)?(?:like[ds]?|love[ds]?|enjoy(?:ed)?|dig|dug)\s+"
    r"|\bsince\s+you\s+(?:\w+\s+)?(?:like[ds]?|loved|enjoyed|watched|saw|mentioned)\s+"
    r"|\byou(?:'ve|\s+have)?\s+(?:already\s+)?(?:seen|watched|mentioned|listed)\s+"
    r"|\b(?:haven'?t|have\s+not|never|not\s+yet)\s+(?:seen|watched)\s+"
    r"|\b(?:similar|close|comparable)\s+to\s+|\bsame\s+(?:vibe|feel|tone)\s+as\s+"
    r"|\b(?:movies?|films?|something|anything|stuff|ones?)\s+like\s+"
    r"|\bin\s+the\s+(?:vein|style|spirit)\s+of\s+|\breminds?\s+me\s+of\s+"
    r"|\bcompared?\s+(?:to|with)\s+|\b(?:better|worse)\s+than\s+"
    r"|\b(?:director|creator|writer|maker)s?\s+of\s+|\bguy\s+who\s+(?:did|made|directed)\s+"
    r"|\bfrom\s+the\s+(?:director|creator|writer|maker)s?\s+of\s+"
    r")[\"'“”‘’*_\s]*\Z",
    re.IGNORECASE | re.MULTILINE,
)
_REFERENCED_AFTER = re.compile(r"[\"'“”‘’*_]*\s*(?:vibes?|-?esque)\b", re.IGNORECASE)
_NEGATIVE_BEFORE = re.compile(
    r"\b(?:avoid|skip|don'?t\s+(?:watch|bother\s+with)|stay\s+away\s+from|not\s+a\s+fan\s+of"
    r"|hated|can'?t\s+stand)\s+[\"'“”‘’*_\s]*\Z",
    re.IGNORECASE,
)
_NEGATIVE_AFTER = re.compile(
    r"[\"'“”‘’*_)]*\s*(?:\(\d{4}\)\s*)?(?:is|was)\s+(?:so\s+|really\s+|pretty\s+)?"
    r"(?:terrible|awful|overrated|boring|garbage|trash|bad)\b",
    re.IGNORECASE,
)


def read_stance(text: str, start: int, end: int) -> Stance:
    """How the comment uses the title at `text[start:end]`: `referenced` when it is the
    requester's example or a point of comparison ("if you liked X", "similar to X", a quoted
    request line, "the director of X", "haven't seen X"), `negative` when the comment advises
    against it, else `recommended`. Reads a bounded window on the same line, so it stays linear.

    >>> text = "If you liked Arrival, try Coherence. Avoid Lucy."
    >>> [read_stance(text, text.index(t), text.index(t) + len(t)) for t in ("Arrival", "Coherence", "Lucy")]
    ['referenced', 'recommended', 'negative']
    """  # noqa: E501
    line_start = text.rfind("\n", max(0, start - _STANCE_WINDOW), start) + 1
    before = text[max(line_start, start - _STANCE_WINDOW) : start]
    line_end = text.find("\n", end, end + _STANCE_WINDOW)
    after = text[end : line_end if line_end != -1 else end + _STANCE_WINDOW]
    if _NEGATIVE_BEFORE.search(before) or _NEGATIVE_AFTER.match(after):
        return "negative"
    if _REFERENCED_BEFORE.search(before) or _REFERENCED_AFTER.match(after):
        return "referenced"
    return "recommended"
