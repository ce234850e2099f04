"""Benchmark: the offline catalog gazetteer on one long comment (issue 9: it was quadratic).

Texts of 10 kB, 100 kB, 1 MB and 5 MB (characters) are built by joining real comments from the
r/MovieSuggestions dump and the r/AskReddit "magical movies" thread, shuffled once with a fixed
seed so that every size has the same mix, and cycled where the 5 MB text needs it. The
gazetteer is the one the reddit_movies pipeline builds (merged movie catalog, titles + aliases).
The baseline, timed on the same text in the same run, is a plain `re.finditer(r"\\w+")` word
tokenisation pass. Each timing is the best of several repetitions (fewer for long texts), each
with a cold `normalize_title` cache.

    python benchmarks/bench_extract.py [--sizes 10000 100000 1000000 5000000]

The last line is JSON: seconds per MB at the largest size, the per-character cost of the largest
size over the smallest (~1 when linear) and the gazetteer's time over the tokenisation pass.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from remark_data.stages.extract.gazetteer import Gazetteer
from remark_data.stages.ground.matching import normalize_title

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
DUMPS = CORPUS / "reddit" / "dumps"
WORD = re.compile(r"\w+")


def real_comments() -> list[str]:
    bodies = []
    movies = DUMPS / "moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"
    for line in movies.read_text().splitlines():
        bodies.append(json.loads(line).get("body") or "")
    for path in sorted((DUMPS / "askreddit_magical_movies_2021-04").rglob("*comments*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            bodies.extend(json.loads(line).get("body") or "" for line in handle)
    kept = [b for b in bodies if b and b not in ("[deleted]", "[removed]")]
    random.Random(9).shuffle(kept)
    return kept


def long_text(comments: list[str], size: int) -> str:
    parts, total, i = [], 0, 0
    while total < size:
        parts.append(comments[i % len(comments)])
        total += len(parts[-1]) + 2
        i += 1
    return "\n\n".join(parts)[:size]


def movie_gazetteer() -> Gazetteer:
    """The reddit_movies extract stage's gazetteer, built the way the pipeline builds it."""
    from remark_data.config import Project, load_pipeline_spec
    from remark_data.pipeline import PipelineRun

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "pipelines", root / "pipelines")
        (root / "data").mkdir()
        shutil.copy(REPO / "data" / "sources.toml", root / "data" / "sources.toml")
        project = Project(root=root, mirror=CORPUS)
        spec = load_pipeline_spec(project.pipeline_path("reddit_movies"))
        assert spec.extract is not None
        catalog = PipelineRun(spec=spec, project=project)._global_catalog()
        assert catalog is not None
        names = (
            catalog.filter(pl.col("kind").is_in(spec.extract.kinds))
            .select("item_id", pl.concat_list("title", "aliases").alias("name"))
            .explode("name")
            .drop_nulls()
        )
        return Gazetteer(names.iter_rows())


def best_of(run: Callable[[], object], repeats: int) -> float:
    """Best time with a cold token cache each time: `normalize_title` is memoised, and a short text
    repeated would otherwise be timed on cache hits only, a long one mostly on misses."""
    times = []
    for _ in range(repeats):
        normalize_title.cache_clear()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 5_000_000]
    )
    args = parser.parse_args()
    comments = real_comments()
    start = time.perf_counter()
    gazetteer = movie_gazetteer()
    print(f"gazetteer: {len(gazetteer.keys):,} keys, built in {time.perf_counter() - start:.1f}s "
          f"(catalog load included); texts from {len(comments):,} real comments")  # fmt: skip
    header = ("chars", "mentions", "gazetteer s", "ns/char", "tokenize s", "ratio")
    print("{:>10} {:>9} {:>12} {:>9} {:>11} {:>6}".format(*header))
    rows = []
    for size in sorted(args.sizes):
        text = long_text(comments, size)
        repeats = max(3, min(20, 2_000_000 // size))
        mentions = len(gazetteer.find(text))
        ours = best_of(lambda text=text: gazetteer.find(text), repeats)
        base = best_of(lambda text=text: [m.group() for m in WORD.finditer(text)], repeats)
        rows.append((len(text), ours, base))
        print(f"{len(text):>10,} {mentions:>9,} {ours:>12.4f} {ours / len(text) * 1e9:>9.2f} "
              f"{base:>11.4f} {ours / base:>5.1f}x")  # fmt: skip
    (small, small_s, _), (large, large_s, large_base) = rows[0], rows[-1]
    scaling = (large_s / large) / (small_s / small)
    print(f"per-character cost, {large:,} vs {small:,} chars: {scaling:.2f}x (1.0 = linear)")
    print(f"gazetteer vs a re.finditer word pass at {large:,} chars: {large_s / large_base:.1f}x")
    print(json.dumps({
        "bench": "gazetteer",
        "seconds_per_mb": round(large_s / (large / 1e6), 4),
        "scaling_5mb_vs_10kb": round(scaling, 3),
        "vs_tokenize": round(large_s / large_base, 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
