"""Benchmark: LLM title extraction (Qwen2.5-Coder-0.5B on llama-server) vs the gazetteer.

Accuracy on the 110 hand-labelled r/MovieSuggestions comments of
`tests/data/moviesuggestions_titles_gold.jsonl` (232 titles; see tests/data/README.md). A
predicted title counts as correct when it matches a gold title of the same comment, normalised
or with rapidfuzz ratio ≥ 90, each gold title at most once. Throughput: requests/s at concurrency
1, 2 and 4 against the same server (fresh cache each time), and the client's CPU time as a share
of wall time. Needs `scripts/install_llm.sh`.

    python benchmarks/bench_llm.py [--throughput-texts 40]
"""

from __future__ import annotations

import argparse
import html
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GOLD = REPO / "tests/data/moviesuggestions_titles_gold.jsonl"
CORPUS = REPO.parent / "shared/corpus"
COMMENTS = CORPUS / "reddit/dumps/moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"


def score(predicted: dict[str, list[str]], gold: dict[str, list[str]]) -> dict[str, float]:
    from rapidfuzz import fuzz

    from remark_data.stages.ground.matching import normalize_title

    true_positive = n_predicted = n_gold = 0
    for key, titles in gold.items():
        remaining = [normalize_title(t) for t in titles]
        n_gold += len(remaining)
        for title in dict.fromkeys(normalize_title(t) for t in predicted.get(key, [])):
            n_predicted += 1
            match = next((g for g in remaining if g == title or fuzz.ratio(g, title) >= 90), None)
            if match is not None:
                remaining.remove(match)
                true_positive += 1
    precision = true_positive / n_predicted if n_predicted else 0.0
    recall = true_positive / n_gold
    return {
        "precision": precision,
        "recall": recall,
        "predicted": n_predicted,
        "correct": true_positive,
    }


def gazetteer_predictions(rows: list[dict]) -> dict[str, list[str]]:
    from remark_data.stages.extract.gazetteer import Gazetteer
    from remark_data.stages.ground.catalogs import load_movie_catalog

    files = {
        "movielens_movies": CORPUS / "catalogs/movies/ml-latest-small/movies.csv",
        "movielens_links": CORPUS / "catalogs/movies/ml-latest-small/links.csv",
        "rank_grpo": CORPUS / "catalogs/movies/rank_grpo/gt_catalog.pkl",
        "reddit_movie_v1": CORPUS / "catalogs/movies/reddit_movie_v1/entity2id.json",
    }
    catalog = load_movie_catalog(files, dataset="bench")
    names = [
        (i, n)
        for i, t, a in catalog.select("item_id", "title", "aliases").iter_rows()
        for n in [t, *a]
    ]
    gazetteer = Gazetteer(names)
    return {
        r["comment_id"]: list(
            dict.fromkeys(f.surface for f in gazetteer.find(html.unescape(r["text"])))
        )
        for r in rows
    }


def with_texts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gold holds ids and titles only: each comment's text comes from the corpus dump."""
    wanted = {r["comment_id"] for r in rows}
    bodies = {}
    with COMMENTS.open() as lines:
        for line in lines:
            record = json.loads(line)
            if record["id"] in wanted:
                bodies[record["id"]] = record["body"]
    return [{**r, "text": bodies[r["comment_id"]]} for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--throughput-texts", type=int, default=40)
    parser.add_argument("--batch-chars", type=int, default=200, help="0: skip the batched run")
    parser.add_argument("--only-batched", action="store_true")
    args = parser.parse_args()
    from remark_data.config import LLMSpec
    from remark_data.stages.extract.llm import cache_key, extract_with_llm
    from tests.llm_servers import LlamaServer

    kinds = ("movie",)
    rows = with_texts([json.loads(line) for line in GOLD.read_text().splitlines()])
    gold = {r["comment_id"]: r["titles"] for r in rows}
    texts = {r["comment_id"]: r["text"] for r in rows}
    print(f"gold: {len(rows)} comments, {sum(map(len, gold.values()))} titles")
    gazetteer = score(gazetteer_predictions(rows), gold)
    print(
        f"  gazetteer (merged movie catalog): precision {gazetteer['precision']:.3f}, "
        f"recall {gazetteer['recall']:.3f} "
        f"({gazetteer['correct']}/{gazetteer['predicted']} predicted correct)"
    )
    runs = [] if args.only_batched else [(4, 0), (2, 0), (1, 0)]
    if args.batch_chars:
        runs.append((4, args.batch_chars))
    with LlamaServer(threads=2, parallel=4) as server, tempfile.TemporaryDirectory() as tmp:
        for concurrency, batch_chars in runs:
            spec = LLMSpec(
                base_url=server.url,
                model="qwen2.5-coder-0.5b",
                timeout=300,
                concurrency=concurrency,
                batch_chars=batch_chars,
                batch_size=4,
            )
            full = concurrency == 4
            subset = texts if full else dict(list(texts.items())[: args.throughput_texts])
            cpu, wall = time.process_time(), time.perf_counter()
            cache = Path(tmp) / f"c{concurrency}-{batch_chars}.sqlite"
            summary = extract_with_llm(subset, spec=spec, kinds=kinds, cache_path=cache)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            label = f"concurrency {concurrency}" + (
                f", batched ≤{batch_chars} chars x4" if batch_chars else ""
            )
            print(
                f"  {label}: {summary.requests} requests for {len(subset)} texts in {wall:.1f} s = "
                f"{summary.requests / wall:.2f} req/s, {len(subset) / wall:.2f} texts/s; "
                f"client CPU {cpu / wall:.1%} of wall; {summary.ok} ok, "
                f"{summary.permanent} permanent, {summary.transient} transient, "
                f"{summary.dropped_titles} titles dropped by the guard"
            )
            if full:
                answers = {
                    cid: summary.results[cache_key(text, spec=spec, kinds=kinds)]
                    for cid, text in texts.items()
                }
                predicted = {
                    cid: [t["title"] for t in answer.get("titles") or []]
                    for cid, answer in answers.items()
                }
                llm = score(predicted, gold)
                print(
                    f"    Qwen2.5-Coder-0.5B: precision {llm['precision']:.3f}, "
                    f"recall {llm['recall']:.3f} "
                    f"({llm['correct']}/{llm['predicted']} predicted correct)"
                )


if __name__ == "__main__":
    main()
