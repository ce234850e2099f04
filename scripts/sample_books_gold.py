"""Select the books dev-gold comments (issue: label fidelity).

Rule: r/booksuggestions posts sorted by `reddit_id` as strings, every 20th from the 3rd (positions
2, 22, 42, ...), all their comments; r/suggestmeabook posts in file order, leaving out the meta
post (line 1), every 10th from the 2nd (positions 1, 11, 21, ...), all their comments.

    python scripts/sample_books_gold.py OUT.jsonl   # one line per kept comment, for labelling
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

SCRAPED = Path(__file__).resolve().parents[1] / "../shared/corpus/reddit/scraped"


def main() -> None:
    rows = []
    posts = json.loads(
        (SCRAPED / "booksuggestions_2025-07/reddit_booksuggestions_cleaned.json").read_text()
    )
    for post in sorted(posts, key=lambda p: p["reddit_id"])[2::20]:
        for comment in post["comments"]:
            rows.append(
                {
                    "source": "booksuggestions",
                    "request_id": post["reddit_id"],
                    "request_title": post["title"],
                    "request_text": "",
                    "comment_id": comment["comment_id"],
                    "text": comment["text"],
                }
            )
    lines = (SCRAPED / "suggestmeabook/posts.jsonl").read_text().splitlines()[1:]
    for post in map(json.loads, lines[1::10]):
        # The ids the suggestmeabook reader gives (remark_data/scrape/reddit_scraped.py).
        text = f"{post['title']}\n\n{post.get('body') or ''}".strip()
        post_key = "smab-" + hashlib.sha256(text.encode()).hexdigest()[:12]
        for index, text in enumerate(post["comments"]):
            rows.append(
                {
                    "source": "suggestmeabook",
                    "request_id": post_key,
                    "request_title": post["title"],
                    "request_text": post.get("body", ""),
                    "comment_id": f"{post_key}/c{index}",
                    "text": text,
                }
            )
    with open(sys.argv[1], "w") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} comments", file=sys.stderr)


if __name__ == "__main__":
    main()
