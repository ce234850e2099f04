"""Reddit markup that hides titles from a tokenizer, masked without moving any offset."""

from __future__ import annotations

import re

# Markup that hides titles from the tokens, masked with spaces of the same length so every
# offset still points into the original text: a markdown link keeps its visible text
# ("[The Handmaiden](https://…)"), a bare URL goes, an HTML entity becomes its character.
_MD_LINK = re.compile(r"\[([^\]\n]{1,300})\]\((?:[^()\s]|\([^()\s]*\))*\)")
_URL = re.compile(r"https?://\S+|www\.\S+")
_ENTITY = re.compile(r"&(amp|gt|lt|quot|nbsp|#x200[bB]|#39);")
_ENTITY_CHARS = {"amp": "&", "gt": ">", "lt": "<", "quot": '"', "nbsp": " ", "#39": "'"}


def mask_markup(text: str) -> str:
    """`text` with markdown links reduced to their visible text, URLs blanked and HTML entities
    replaced by their character, every change padded with spaces so offsets stay valid.

    >>> mask_markup("[Heat](https://x.y/heat) &amp; Up")
    ' Heat                    &     Up'
    """

    def link(found: re.Match[str]) -> str:
        return " " + found.group(1) + " " * (len(found.group()) - len(found.group(1)) - 1)

    def entity(found: re.Match[str]) -> str:
        char = _ENTITY_CHARS.get(found.group(1), " ")
        return char + " " * (len(found.group()) - 1)

    text = _MD_LINK.sub(link, text)
    text = _URL.sub(lambda found: " " * len(found.group()), text)
    return _ENTITY.sub(entity, text)
