"""Stage 2: mentions of titles in response text: a catalog gazetteer, an LLM, or both."""

from __future__ import annotations


def mention_prefix(request_id: str, response_id: str | None, comment_id: str | None) -> str:
    """The stem of the ids of mentions read from one comment (or from the request prompt).

    >>> mention_prefix("t1", "t1/ann", "c9"), mention_prefix("t1", "t1/c9", "c9")
    ('t1/ann/c9', 't1/c9')
    >>> mention_prefix("t1", None, None)
    't1/seen'
    """
    if response_id is None:
        return f"{request_id}/seen"
    if comment_id is None or response_id == comment_id or response_id.endswith(f"/{comment_id}"):
        return response_id
    return f"{response_id}/{comment_id}"
