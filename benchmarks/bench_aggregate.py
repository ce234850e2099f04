"""Benchmark: aggregate + stats over a scaled ProtoQA train set vs a plain-Python baseline.

The real 8,782 train questions (797,760 answer rows, one per responder) are replicated until there
are at least 5 million answer rows. Both implementations start from the same in-memory inputs
(polars frames for ours, lists of tuples for the baseline) and are timed in separate child
processes so each reports its own peak RSS. Prints the speed ratio measured in this run, last as
one JSON line.

    python benchmarks/bench_aggregate.py [--rows 5000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "protoqa" / "train_simplified"
TABLES = ("requests", "responses", "groundings", "catalog")


def build_inputs(directory: Path, min_rows: int) -> int:
    from remark_data.stages.ground.grounding import ground_mentions
    from remark_data.stages.scrape.protoqa import read_protoqa_train

    part = read_protoqa_train(
        CORPUS / "simplified_train_question.json",
        CORPUS / "simplified_train_answer.json",
        dataset="protoqa",
        source="train",
        split="train",
    )
    groundings = ground_mentions(part.mentions, part.catalog, methods=["exact"], year_tolerance=0)
    base = {
        "requests": part.requests,
        "responses": part.responses,
        "groundings": groundings,
        "catalog": part.catalog,
    }
    copies = -(-min_rows // part.mentions.height)
    id_columns = ("request_id", "response_id", "mention_id", "item_id", "scope", "responder_id")
    for name, frame in base.items():
        scaled = pl.concat(
            frame.with_columns([pl.col(c) + f"~{k}" for c in id_columns if c in frame.columns])
            for k in range(copies)
        )
        scaled.write_parquet(directory / f"{name}.parquet")
    return copies * part.mentions.height


def run_ours(directory: Path) -> float:
    from remark_data.stages.aggregate import build_labels
    from remark_data.stages.stats import label_stats

    tables = {name: pl.read_parquet(directory / f"{name}.parquet") for name in TABLES}
    start = time.perf_counter()
    labels, _ = build_labels(**tables)
    label_stats(labels)
    return time.perf_counter() - start


def baseline_labels(
    responses: list[tuple[str, str]],
    groundings: list[tuple[str, str | None, str, str, str | None, str]],
    catalog: dict[str, tuple[str, int | None]],
) -> dict[str, dict]:
    """A straightforward dict-of-counters implementation producing the same labels."""
    matched = {"exact", "normalized", "year_tolerance", "fuzzy"}
    n_responders: Counter[str] = Counter()
    responder_order: dict[str, list[str]] = defaultdict(list)
    for request, response in responses:
        n_responders[request] += 1
        responder_order[request].append(response)
    per_responder: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for request, response, role, stance, item, status in groundings:
        if status not in matched or role != "response" or stance != "recommended":
            continue
        if item in per_responder[response]:
            continue
        per_responder[response].add(item)
        counts[request][item] += 1
    labels = {}
    for request, n in n_responders.items():
        ranked = sorted(counts[request].items(), key=lambda kv: (-kv[1], catalog[kv[0]][0], kv[0]))
        labels[request] = {
            "n_responders": n,
            "items": [(i, catalog[i][0], catalog[i][1], c, c / n) for i, c in ranked],
            "union_item_ids": [i for i, _ in ranked],
            "responder_item_ids": [sorted(per_responder[r]) for r in responder_order[request]],
            "groundtruth_with_release_year": [
                [catalog[i][0], "" if catalog[i][1] is None else str(catalog[i][1])]
                for i, _ in ranked
            ],
        }
    return labels


def baseline_stats(labels: dict[str, dict]) -> dict[str, float]:
    sizes = [label["n_responders"] for label in labels.values()]
    all_counts = [item[3] for label in labels.values() for item in label["items"]]
    return {
        "responders_mean": statistics.fmean(sizes),
        "responders_median": statistics.median(sizes),
        "single_responder_share": sum(1 for s in sizes if s == 1) / len(sizes),
        "single_mention_share": sum(1 for c in all_counts if c == 1) / len(all_counts),
        "union_to_sum": len(all_counts) / sum(all_counts),
    }


def _baseline_inputs(directory: Path) -> tuple[list, list, dict]:
    responses = pl.read_parquet(directory / "responses.parquet").select("request_id", "response_id")
    groundings = pl.read_parquet(directory / "groundings.parquet").select(
        "request_id", "response_id", "role", "stance", "item_id", "status"
    )
    catalog = pl.read_parquet(directory / "catalog.parquet")
    titles = dict(
        zip(catalog["item_id"], zip(catalog["title"], catalog["year"], strict=True), strict=True)
    )
    return responses.rows(), groundings.rows(), titles


def run_baseline(directory: Path) -> float:
    responses, groundings, catalog = _baseline_inputs(directory)
    start = time.perf_counter()
    baseline_stats(baseline_labels(responses, groundings, catalog))
    return time.perf_counter() - start


def check_same_labels(directory: Path, sample: int = 300) -> None:
    """Both implementations agree on every field of a sample of requests, and on the stats."""
    from remark_data.stages.aggregate import build_labels
    from remark_data.stages.stats import label_stats

    tables = {name: pl.read_parquet(directory / f"{name}.parquet") for name in TABLES}
    ours, _ = build_labels(**tables)
    expected = baseline_labels(*_baseline_inputs(directory))
    for row in ours.sample(sample, seed=0).iter_rows(named=True):
        want = expected[row["request_id"]]
        got_items = [
            (i["item_id"], i["title"], i["year"], i["count"], i["p_hat"]) for i in row["items"]
        ]
        assert got_items == want["items"], row["request_id"]
        for key in (
            "n_responders",
            "union_item_ids",
            "responder_item_ids",
            "groundtruth_with_release_year",
        ):
            assert row[key] == want[key], (row["request_id"], key)
    stats = label_stats(ours).filter(pl.col("split") == "train").row(0, named=True)
    for key, value in baseline_stats(expected).items():
        assert math.isclose(stats[key], value, rel_tol=1e-12), (key, stats[key], value)


def child(kind: str, directory: Path, repeat: int) -> None:
    runner = run_ours if kind == "ours" else run_baseline
    seconds = [runner(directory) for _ in range(repeat)]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": min(seconds), "all": seconds, "peak_rss_mib": peak_mib}))


def prepare(directory: Path, rows: int) -> None:
    print(json.dumps({"rows": build_inputs(directory, rows)}))
    check_same_labels(directory)


def measure(kind: str, directory: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--dir", str(directory),
         "--repeat", str(repeat)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_prepare(directory: Path, rows: int) -> int:
    out = subprocess.run(
        [sys.executable, __file__, "--child", "prepare", "--dir", str(directory),
         "--rows", str(rows)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])["rows"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=["prepare", "ours", "baseline"])
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    if args.child == "prepare":
        prepare(args.dir, args.rows)
        return
    if args.child:
        child(args.child, args.dir, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        # Each step in its own process, so every peak RSS is that step's alone.
        rows = measure_prepare(directory, args.rows)
        ours = measure("ours", directory, args.repeat)
        baseline = measure("baseline", directory, args.repeat)
    print(f"aggregate + stats over {rows:,} ProtoQA answer rows (best of {args.repeat});")
    print("  outputs of both checked equal on 300 sampled requests")
    print(f"  remark (polars):   {ours['seconds']:.2f} s, peak RSS {ours['peak_rss_mib']:,.0f} MiB")
    print(
        f"  dict-of-counters: {baseline['seconds']:.2f} s, "
        f"peak RSS {baseline['peak_rss_mib']:,.0f} MiB"
    )
    ratio = baseline["seconds"] / ours["seconds"]
    print(f"  speed-up: {ratio:.1f}x (target >= 20x)")
    summary = {
        "bench": "aggregate",
        "vs_baseline": round(ratio, 1),
        "rows": rows,
        "seconds": round(ours["seconds"], 3),
        "baseline_seconds": round(baseline["seconds"], 3),
        "peak_rss_mib": round(ours["peak_rss_mib"]),
        "baseline_peak_rss_mib": round(baseline["peak_rss_mib"]),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
