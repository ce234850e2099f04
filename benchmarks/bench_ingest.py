"""Benchmark: streaming ingest of a Reddit comments dump (.zst, 2 GiB window).

Two kinds of input, each ≥ `--gb` GB of NDJSON compressed like the real dumps (`zstd --long=31`):

- a per-subreddit dump: the real r/MovieSuggestions comments (4,804 lines, ids made unique per
  copy), every record kept;
- a monthly-style dump (`--monthly`): the real AskReddit comments of the corpus (40,908 lines,
  another subreddit) with 1% of lines from the real r/MovieSuggestions comments mixed in, so
  1% of records are kept, as when a month of all Reddit is read for one request subreddit.

Measured in separate processes, same file:

- `zstd -d --long=31 -c > /dev/null`: the decompression limit;
- a line-by-line loop: zstandard stream reader + `json.loads` per line + the subreddit filter;
- remark's `ingest_dump` (decompress, prefilter lines by subreddit, parse blocks with polars,
  filter, write an Arrow IPC file).

    python benchmarks/bench_ingest.py [--gb 1 2] [--monthly 1]

The last line printed is one JSON object with the ratios of every input.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DUMPS = REPO.parent / "shared/corpus/reddit/dumps"
COMMENTS = DUMPS / "moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"
OTHERS = DUMPS / "askreddit_magical_movies_2021-04/AskReddit_mx0pwd_comments.ndjson.gz"


def _unique(lines: list[bytes], copy: int) -> bytes:
    suffix = f"{copy}x".encode()
    return b"".join(line.replace(b'"id": "', b'"id": "' + suffix, 1) + b"\n" for line in lines)


def build(path: Path, gigabytes: float, *, kept_share: float = 1.0) -> tuple[int, int]:
    """NDJSON of ≥ `gigabytes` from the real comments, compressed with zstd --long=31; with
    `kept_share` < 1 the real AskReddit comments fill the rest. Returns (bytes, rows kept)."""
    import gzip

    wanted = COMMENTS.read_bytes().splitlines()
    others = gzip.decompress(OTHERS.read_bytes()).splitlines() if kept_share < 1 else []
    # Wanted lines per copy: all of them, or the share of a copy of the other lines.
    per_copy = len(wanted) if not others else round(len(others) * kept_share / (1 - kept_share))
    target = int(gigabytes * 1e9)
    written = copies = rows = 0
    plain = path.with_suffix(".ndjson")
    with plain.open("wb") as handle:
        while written < target:
            start = copies * per_copy % len(wanted)
            picked = (wanted * 2)[start : start + per_copy]
            lines = picked + others
            if others:  # spread the wanted lines among the others, as in a month of all Reddit
                random.Random(copies).shuffle(lines)
            block = _unique(lines, copies)
            handle.write(block)
            written += len(block)
            rows += len(picked)
            copies += 1
    subprocess.run(
        ["zstd", "-q", "-f", "--long=31", "-T2", "-3", str(plain), "-o", str(path)], check=True
    )
    plain.unlink()
    return written, rows


def run_zstd(path: Path) -> None:
    with open("/dev/null", "wb") as sink:
        subprocess.run(["zstd", "-d", "-q", "--long=31", "-c", str(path)], stdout=sink, check=True)


def run_loop(path: Path) -> int:
    import zstandard

    kept = 0
    reader = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(path.open("rb"))
    for line in io.TextIOWrapper(reader, encoding="utf-8"):
        record = json.loads(line)
        if record.get("subreddit", "").lower() == "moviesuggestions":
            kept += 1
    return kept


def run_ours(path: Path) -> int:
    from remark_data.stages.scrape.dumps import Quarantine, ingest_dump
    from remark_data.stages.scrape.reddit_dumps import COMMENT_SCHEMA

    with tempfile.TemporaryDirectory() as tmp:
        return ingest_dump(
            path,
            COMMENT_SCHEMA,
            Path(tmp) / "out.arrow",
            quarantine=Quarantine(),
            subreddits=["MovieSuggestions"],
        )


def child(kind: str, path: Path) -> None:
    start = time.perf_counter()
    kept = {"zstd": run_zstd, "loop": run_loop, "ours": run_ours}[kind](path)
    seconds = time.perf_counter() - start
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rss_mib": max(own, children), "kept": kept}))


def measure(kind: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--path", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(path: Path, *, label: str, size: int, rows: int) -> dict:
    """zstd, remark and the loop on one file; prints them and returns the ratios."""
    mb = size / 1e6
    zstd = measure("zstd", path)
    ours = measure("ours", path)
    # The loop at every size: its peak RSS shows what the zstd window alone costs.
    loop = measure("loop", path)
    assert loop["kept"] == ours["kept"] == rows, (loop["kept"], ours["kept"], rows)
    print(
        f"{label}: {mb:,.0f} MB NDJSON, {rows:,} comments kept, "
        f"{path.stat().st_size / 1e6:,.0f} MB .zst"
    )
    for name, result in (
        ("zstd -d --long=31", zstd),
        ("remark ingest_dump", ours),
        ("json.loads loop", loop),
    ):
        print(
            f"  {name:20s} {result['seconds']:6.1f} s  {mb / result['seconds']:6.0f} MB/s  "
            f"peak RSS {result['rss_mib']:,.0f} MiB"
        )
    ratios = {
        "input": label,
        "mb": round(mb),
        "vs_zstd": round(zstd["seconds"] / ours["seconds"], 3),
        "vs_json_loop": round(loop["seconds"] / ours["seconds"], 2),
        "rss_mib": round(ours["rss_mib"]),
        "loop_rss_mib": round(loop["rss_mib"]),
    }
    print(
        f"  remark: {ratios['vs_zstd']:.0%} of zstd's speed, {ratios['vs_json_loop']:.1f}x the loop"
    )
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, nargs="*", default=[1.0, 2.0])
    parser.add_argument("--monthly", type=float, nargs="*", default=[1.0], help="GB, 1%% kept")
    parser.add_argument("--child", choices=["zstd", "loop", "ours"])
    parser.add_argument("--path", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path)
        return
    results = []
    inputs = [(gb, 1.0) for gb in args.gb] + [(gb, 0.01) for gb in args.monthly]
    with tempfile.TemporaryDirectory(dir=REPO / "data") as tmp:
        for gigabytes, share in inputs:
            path = Path(tmp) / f"comments_{gigabytes}gb_{share}.zst"
            size, rows = build(path, gigabytes, kept_share=share)
            label = f"{gigabytes:g} GB, {share:.0%} kept"
            results.append(compare(path, label=label, size=size, rows=rows))
            path.unlink()
    print(json.dumps({"bench": "ingest", "inputs": results}))


if __name__ == "__main__":
    main()
