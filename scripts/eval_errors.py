"""List a run's errors against a comment gold, for reading: per gold comment, the recommended
titles it missed and the items it added, with the comment text (so write it outside the repo).

    python scripts/eval_errors.py reddit_movies tests/data/movies_dev_gold.jsonl /tmp/errors.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl

from remark_data.evaluate.gold import gold_key, merged_into, read_gold
from remark_data.runner import RunFolder
from remark_data.schemas import MATCHED_STATUSES
from remark_data.stages.extract.stage import comment_texts


def main(pipeline: str, gold_path: Path, out: Path) -> None:
    run = RunFolder(Path("data/runs") / pipeline)
    comments = comment_texts(run.read("scrape", "responses").drop_nulls("text"))
    text = dict(comments.select("comment_id", "text").iter_rows())
    found = (
        run.read("extract", "mentions")
        .join(
            run.read("ground", "groundings").select("mention_id", "item_id", "status", "reason"),
            on="mention_id",
        )
        .filter(pl.col("role") == "response")
    )
    by_comment = found.partition_by("comment_id", as_dict=True)
    catalog_table = run.read("ground", "catalog")
    catalog = dict(catalog_table.select("item_id", "title").iter_rows())
    kept = merged_into(catalog_table)  # gold ids labelled before a merge, as `remark eval`
    with out.open("w") as sink:
        for comment in read_gold(gold_path):
            if comment.dataset != pipeline:
                continue
            wanted = {
                kept.get(gold_key(t), gold_key(t)): t
                for t in comment.titles
                if t.stance == "recommended"
            }
            ours = by_comment.get((comment.comment_id,), pl.DataFrame())
            matched = ours.filter(pl.col("status").is_in(MATCHED_STATUSES)) if ours.height else ours
            items = {} if not matched.height else {
                r["item_id"]: r for r in matched.iter_rows(named=True)
                if r["stance"] == "recommended"
            }  # fmt: skip
            missed = [
                {"title": t.title, "surface": t.surface, "in_catalog": t.in_catalog,
                 "how_found": [
                     {k: r[k] for k in ("surface", "stance", "status", "reason", "item_id")}
                     for r in (ours.iter_rows(named=True) if ours.height else [])
                     if r["surface"].casefold() == t.surface.casefold()
                 ]}
                for key, t in wanted.items() if key not in items
            ]  # fmt: skip
            added = [
                {"item": catalog.get(i), "item_id": i, "surface": r["surface"],
                 "status": r["status"], "span": [r["span_start"], r["span_end"]]}
                for i, r in items.items() if i not in wanted
            ]  # fmt: skip
            if missed or added:
                record = {
                    "request_id": comment.request_id,
                    "comment_id": comment.comment_id,
                    "text": text.get(comment.comment_id),
                    "missed": missed,
                    "added": added,
                }
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
