"""Benchmark: streaming ingest of a Reddit comments dump (.zst, 2 GiB window).

The input is built from the real r/MovieSuggestions comments (4,804 lines, ids made unique per
copy) until it holds ≥ 1 GB (and ≥ 2 GB for the memory check) of NDJSON, compressed like the real
dumps (`zstd --long=31`). Measured in separate processes, same file:

- `zstd -d --long=31 -c > /dev/null`: the decompression limit;
- a line-by-line loop: zstandard stream reader + `json.loads` per line + the subreddit filter;
- remark's `ingest_dump` (decompress, parse 50k-line batches with polars, filter, write parquet).

    python benchmarks/bench_ingest.py [--gb 1 2]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMENTS = (
    REPO.parent
    / "shared/corpus/reddit/dumps/moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"
)


def build(path: Path, gigabytes: float) -> tuple[int, int]:
    """NDJSON of ≥ `gigabytes` from the real comments, compressed with zstd --long=31."""
    lines = COMMENTS.read_bytes().splitlines()
    target = int(gigabytes * 1e9)
    written = copies = rows = 0
    plain = path.with_suffix(".ndjson")
    with plain.open("wb") as handle:
        while written < target:
            suffix = f"_{copies}".encode()
            block = (
                b"\n".join(
                    line.replace(b'"id": "', b'"id": "' + suffix[1:] + b"x", 1) for line in lines
                )
                + b"\n"
            )
            handle.write(block)
            written += len(block)
            rows += len(lines)
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
            Path(tmp) / "out.parquet",
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, nargs="+", default=[1.0, 2.0])
    parser.add_argument("--child", choices=["zstd", "loop", "ours"])
    parser.add_argument("--path", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path)
        return
    with tempfile.TemporaryDirectory(dir=REPO / "data") as tmp:
        for gigabytes in args.gb:
            path = Path(tmp) / f"comments_{gigabytes}gb.zst"
            size, rows = build(path, gigabytes)
            mb = size / 1e6
            zstd = measure("zstd", path)
            ours = measure("ours", path)
            print(
                f"{mb:,.0f} MB NDJSON ({rows:,} comments), {path.stat().st_size / 1e6:,.0f} MB .zst"
            )
            print(
                f"  zstd -d --long=31 > /dev/null: {zstd['seconds']:6.1f} s  "
                f"{mb / zstd['seconds']:6.0f} MB/s"
            )
            print(
                f"  remark ingest_dump:            {ours['seconds']:6.1f} s  "
                f"{mb / ours['seconds']:6.0f} MB/s  peak RSS {ours['rss_mib']:,.0f} MiB  "
                f"({zstd['seconds'] / ours['seconds']:.0%} of zstd's speed)"
            )
            # The loop at every size: its peak RSS shows what the zstd window alone costs.
            loop = measure("loop", path)
            assert loop["kept"] == ours["kept"] == rows
            print(
                f"  json.loads loop:               {loop['seconds']:6.1f} s  "
                f"{mb / loop['seconds']:6.0f} MB/s  peak RSS {loop['rss_mib']:,.0f} MiB  "
                f"(remark {loop['seconds'] / ours['seconds']:.1f}x faster)"
            )
            path.unlink()


if __name__ == "__main__":
    main()
