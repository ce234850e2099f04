"""Select the r/MovieSuggestions dev-gold threads and comments (issue: label fidelity).

Rule: count each thread's distinct authors over all its comments at any depth, leaving out
`AutoModerator`, `cinephile_bot`, `[deleted]`, null authors and comments with `is_submitter`;
keep threads with >= 3; sort their ids as strings and take positions 4, 12, 20, ... (every 8th,
from the 5th); keep each thread's top-level comments by the same author rules.

    python scripts/sample_movies_gold.py OUT.jsonl   # one line per kept comment, for labelling
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DUMP = (
    Path(__file__).resolve().parents[1] / "../shared/corpus/reddit/dumps/moviesuggestions_2020-09"
)
EXCLUDED = {"AutoModerator", "cinephile_bot", "[deleted]"}


def _counts(comment: dict) -> bool:
    author = comment.get("author")
    return author is not None and author not in EXCLUDED and not comment.get("is_submitter")


def main() -> None:
    comments = [
        json.loads(line)
        for line in (DUMP / "ndjson/MovieSuggestions_comments.ndjson").read_text().splitlines()
    ]
    submissions = {
        s["id"]: s
        for s in map(
            json.loads,
            (DUMP / "ndjson/MovieSuggestions_submissions.ndjson").read_text().splitlines(),
        )
    }
    authors: dict[str, set[str]] = {}
    for comment in comments:
        if _counts(comment):
            authors.setdefault(comment["link_id"].removeprefix("t3_"), set()).add(comment["author"])
    kept = sorted(t for t, a in authors.items() if len(a) >= 3)
    chosen = kept[4::8]
    with open(sys.argv[1], "w") as out:
        for thread in chosen:
            submission = submissions.get(thread, {})
            for comment in comments:
                if comment["link_id"] != f"t3_{thread}" or comment["parent_id"] != f"t3_{thread}":
                    continue
                if not _counts(comment):
                    continue
                row = {
                    "request_id": thread,
                    "request_title": submission.get("title"),
                    "request_text": submission.get("selftext"),
                    "comment_id": comment["id"],
                    "author": comment["author"],
                    "created_utc": comment["created_utc"],
                    "text": comment["body"],
                }
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(kept)} threads with >= 3 responders; {len(chosen)} chosen", file=sys.stderr)


if __name__ == "__main__":
    main()
