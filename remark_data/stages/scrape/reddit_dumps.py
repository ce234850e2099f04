"""Reddit dumps (Pushshift / Arctic-Shift NDJSON: .zst with 2 GiB windows, .gz or plain) → threads.

Dumps are streamed: bytes are decompressed in 32 MiB blocks cut at line ends, and each block is
parsed by polars in one call with a fixed schema (only the fields used are kept), so memory stays
bounded by the block, not the file. A block polars refuses (or one with a non-string ``author``,
which polars would quietly turn into a string) is re-read line by line and only its bad lines are
quarantined. Records without an id, duplicate ids (first kept) and orphan comments are counted
and quarantined too. A truncated or corrupt ``.zst`` / ``.gz`` is an error naming the compressed
byte offset, never a silently shorter dump.

A thread's responders are the distinct authors other than the OP, bots and ``[deleted]`` /
``[removed]``; one author's several comments are one responder; a comment with a null author is
its own responder, flagged ``null_author``. Comments whose body is ``[deleted]`` / ``[removed]``
or empty say nothing and are dropped first (counted as ``deleted_bodies`` / ``empty_bodies``), so
an author with only such comments is no responder.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import queue
import re
import tempfile
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.errors import RemarkError
from remark_data.stages.scrape import ScrapedSource, empty, requests_table, says_nothing

ZSTD_MAX_WINDOW = 2**31  # the dumps are compressed with --long=31
BLOCK_BYTES = 32 << 20  # parsed by polars in one call; bounds memory per step
# Compressed bytes per decompress call: small, so an error's offset is precise and the outputs
# (~0.5 MiB) do not fragment the heap (1 MiB reads cost ~150 MiB more peak RSS).
READ_BYTES = 1 << 16
# An ``"author"`` key whose value is neither a string nor null. polars would cast it to a string
# (123 → "123", a made-up responder), so a block holding one is parsed line by line instead.
# Inside a JSON string quotes are escaped, so this only matches keys (a nested one at worst,
# which costs the slow path, never a wrong row).
_NON_STRING_AUTHOR = re.compile(rb'"author"\s*:\s*[^\s"n]')
DELETED_AUTHORS = ("[deleted]", "[removed]")

SUBMISSION_SCHEMA: dict[str, Any] = {
    "id": pl.String,
    "author": pl.String,
    "title": pl.String,
    "selftext": pl.String,
    "subreddit": pl.String,
    "created_utc": pl.Int64,
}
COMMENT_SCHEMA: dict[str, Any] = {
    "id": pl.String,
    "author": pl.String,
    "body": pl.String,
    "parent_id": pl.String,
    "link_id": pl.String,
    "subreddit": pl.String,
    "created_utc": pl.Int64,
    "is_submitter": pl.Boolean,
}


def _zstd_chunks(path: Path) -> Iterator[bytes]:
    """Decompressed chunks of a .zst, one frame after another.

    zstandard's stream_reader returns a quiet EOF inside a truncated frame, so frames are fed to
    a decompressobj by hand: a frame still open when the file ends means the file was cut.
    """
    import zstandard

    decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    frame = decompressor.decompressobj()
    frame_start = offset = 0
    in_frame = False  # the current frame has been given bytes but has not ended
    with path.open("rb") as raw:
        while chunk := raw.read(READ_BYTES):
            fed_at, offset = offset, offset + len(chunk)
            while chunk:
                try:
                    out = frame.decompress(chunk)
                except zstandard.ZstdError as exc:  # zstd says which call failed, not which byte
                    raise RemarkError(
                        f"{path}: corrupt zstd data: reading failed at compressed byte {fed_at} "
                        f"(in bytes {fed_at}-{offset} of {path.stat().st_size}): {exc}"
                    ) from exc
                if out:
                    yield out
                in_frame = not frame.eof
                if in_frame:
                    break
                # Concatenated frames (pzstd, appended dumps): the rest starts the next one.
                chunk = frame.unused_data
                frame_start = fed_at = offset - len(chunk)
                frame = decompressor.decompressobj()
    if in_frame:
        raise RemarkError(
            f"{path}: truncated zstd data: the file ends at compressed byte {offset} inside the "
            f"frame that starts at byte {frame_start}"
        ) from EOFError("zstd frame not finished")


def _gzip_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
        while True:
            try:
                chunk = stream.read(READ_BYTES)
            except (EOFError, OSError, zlib.error) as exc:  # cut, bad header, bad data or CRC
                kind = "truncated" if isinstance(exc, EOFError) else "corrupt"
                raise RemarkError(
                    f"{path}: {kind} gzip data: reading failed at compressed byte {raw.tell()} "
                    f"of {path.stat().st_size}: {exc}"
                ) from exc
            if not chunk:
                return
            yield chunk


def _plain_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as stream:
        while chunk := stream.read(BLOCK_BYTES):
            yield chunk


def decompressed_chunks(path: Path) -> Iterator[bytes]:
    """The decompressed NDJSON in chunks, whatever the container (.zst, .gz or plain).

    Raises RemarkError, naming the compressed byte offset, if a .zst or .gz is truncated or
    corrupt, rather than ending early.
    """
    if path.suffix == ".zst":
        return _zstd_chunks(path)
    if path.suffix == ".gz":
        return _gzip_chunks(path)
    return _plain_chunks(path)


def _read_blocks(path: Path, block_size: int) -> Iterator[bytes]:
    pending = bytearray()  # grows in place: one copy of a block in memory, not a list and a join
    for chunk in decompressed_chunks(path):
        pending += chunk
        if len(pending) < block_size:
            continue
        cut = pending.rfind(b"\n") + 1
        if cut == 0:  # a line longer than the block: keep reading
            continue
        with memoryview(pending) as view:  # one copy each (slicing a bytearray makes two)
            block, pending = bytes(view[:cut]), bytearray(view[cut:])
        yield block
    if pending.strip():
        yield bytes(pending) if pending.endswith(b"\n") else bytes(pending) + b"\n"


def iter_blocks(path: Path, *, block_size: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Decompressed blocks of whole lines (~`block_size` bytes each), never a line cut in two.

    Decompression runs in a thread one block ahead (zstandard releases the GIL), so it overlaps
    with the parsing of the previous block; at most two blocks wait in memory.
    """
    blocks: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        try:
            for block in _read_blocks(path, block_size):
                while not stop.is_set():
                    try:
                        blocks.put(block, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            blocks.put(None)
        except BaseException as exc:  # re-raised in the consumer
            blocks.put(exc)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    try:
        while (item := blocks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        producer.join()


@dataclass(kw_only=True)
class Quarantine:
    """What was set aside while reading, with a sample of each kind for the report."""

    counts: dict[str, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)

    def add(self, kind: str, n: int, examples: list[str]) -> None:
        if n:
            self.counts[kind] = self.counts.get(kind, 0) + n
            self.samples.extend(
                f"{kind}: {e[:200]}" for e in examples[: max(0, 20 - len(self.samples))]
            )


def _parse_block(
    block: bytes, schema: dict[str, Any], quarantine: Quarantine, where: str
) -> pl.DataFrame:
    """One block of NDJSON; if polars refuses it, or it holds a non-string author, re-read it by
    line, setting bad ones aside."""
    if not ("author" in schema and _NON_STRING_AUTHOR.search(block)):
        try:
            return pl.read_ndjson(io.BytesIO(block), schema=schema)
        except pl.exceptions.PolarsError:
            pass
    good, bad, odd_author = [], [], []
    for line in block.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad.append(line.decode("utf-8", "replace"))
            continue
        if not isinstance(record, dict):
            bad.append(line.decode("utf-8", "replace"))
        elif "author" in schema and not isinstance(record.get("author", ""), str | None):
            odd_author.append(line.decode("utf-8", "replace"))
        else:
            good.append({k: record.get(k) for k in schema})
    quarantine.add(f"malformed line in {where}", len(bad), bad)
    quarantine.add(f"non-string author in {where}", len(odd_author), odd_author)
    return pl.DataFrame(good, schema=schema, strict=False)


def _drop_without_id(frame: pl.DataFrame, quarantine: Quarantine, kind: str) -> pl.DataFrame:
    """Records without an id cannot be told apart (all would be "duplicates" of one another)."""
    missing = pl.col("id").is_null() | (pl.col("id").str.strip_chars() == "")
    lost = frame.filter(missing)
    quarantine.add(
        f"{kind} without id", lost.height, [str(row) for row in lost.head(20).iter_rows(named=True)]
    )
    return frame.filter(~missing)


def ingest_dump(
    path: Path,
    schema: dict[str, Any],
    out: Path,
    *,
    quarantine: Quarantine,
    subreddits: list[str] | None = None,
    since: int | None = None,
    until: int | None = None,
) -> int:
    """Stream a dump into one parquet file of the records that pass the filters.

    Memory is bounded by one batch of lines whatever the size of the dump; returns rows kept.
    """
    import pyarrow.parquet as pq

    wanted = [s.lower() for s in subreddits or []]
    kept = 0
    writer = None
    try:
        for block in iter_blocks(path):
            frame = _parse_block(block, schema, quarantine, path.name)
            if wanted:
                frame = frame.filter(pl.col("subreddit").str.to_lowercase().is_in(wanted))
            if since is not None:
                frame = frame.filter(
                    pl.col("created_utc").is_null() | (pl.col("created_utc") >= since)
                )
            if until is not None:
                frame = frame.filter(
                    pl.col("created_utc").is_null() | (pl.col("created_utc") < until)
                )
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema, compression="lz4")
            writer.write_table(table)
            kept += frame.height
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        pl.DataFrame(schema=schema).write_parquet(out)
    return kept


def read_dump(
    path: Path,
    schema: dict[str, Any],
    *,
    quarantine: Quarantine,
    subreddits: list[str] | None = None,
    since: int | None = None,
    until: int | None = None,
) -> pl.DataFrame:
    """The records of a dump that pass the subreddit and time filters, with `schema`'s fields."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dump.parquet"
        ingest_dump(
            path,
            schema,
            out,
            quarantine=quarantine,
            subreddits=subreddits,
            since=since,
            until=until,
        )
        return pl.read_parquet(out)


def unescape_html(column: str) -> pl.Expr:
    """Reddit bodies are HTML-escaped, sometimes twice (``&amp;#x200B;``): unescape until stable."""

    def fix(text: str | None) -> str | None:
        if text is None or "&" not in text:
            return text
        previous = None
        while previous != text:
            previous, text = text, html.unescape(text)
        return text.replace("\u200b", "").strip()

    return pl.col(column).map_elements(fix, return_dtype=pl.String, skip_nulls=True)


def _epoch(day: date | None) -> int | None:
    return (
        None if day is None else int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    )


@dataclass(frozen=True, kw_only=True)
class ThreadOptions:
    subreddits: list[str]
    since: date | None = None
    until: date | None = None
    include_replies: bool = False
    bots: list[str] = field(default_factory=lambda: ["AutoModerator"])


def read_reddit_dump(
    submissions_path: Path,
    comments_path: Path,
    *,
    dataset: str,
    source: str,
    split: str,
    options: ThreadOptions,
) -> ScrapedSource:
    """Requests (submissions) and responders (comment authors) from a pair of dump files."""
    quarantine = Quarantine()
    submissions = read_dump(
        submissions_path,
        SUBMISSION_SCHEMA,
        quarantine=quarantine,
        subreddits=options.subreddits,
        since=_epoch(options.since),
        until=_epoch(options.until),
    )
    comments = read_dump(
        comments_path, COMMENT_SCHEMA, quarantine=quarantine, subreddits=options.subreddits
    )
    submissions = _drop_without_id(submissions, quarantine, "submission")
    comments = _drop_without_id(comments, quarantine, "comment")
    if submissions.is_empty():
        raise RemarkError(
            f"{submissions_path}: no submission of {options.subreddits} in the time range"
        )

    duplicated_subs = submissions.filter(
        pl.col("id").is_duplicated() & ~pl.col("id").is_first_distinct()
    )
    quarantine.add(
        "duplicate submission id", duplicated_subs.height, duplicated_subs["id"].to_list()
    )
    submissions = submissions.unique("id", keep="first", maintain_order=True)
    duplicated = comments.filter(pl.col("id").is_duplicated() & ~pl.col("id").is_first_distinct())
    quarantine.add("duplicate comment id", duplicated.height, duplicated["id"].to_list())
    comments = comments.unique("id", keep="first", maintain_order=True).with_columns(
        pl.col("link_id").str.strip_prefix("t3_").alias("request_id")
    )
    orphans = comments.join(
        submissions.select(pl.col("id").alias("request_id")), on="request_id", how="anti"
    )
    quarantine.add("orphan comment (no submission)", orphans.height, orphans["id"].to_list())
    comments = comments.join(
        submissions.select(pl.col("id").alias("request_id"), pl.col("author").alias("op")),
        on="request_id",
    )
    if not options.include_replies:
        comments = comments.filter(pl.col("parent_id") == pl.col("link_id"))
    deleted_bodies = comments.filter(says_nothing("body")).height
    empty_bodies = comments.filter(pl.col("body").str.strip_chars().fill_null("") == "").height
    said = comments.filter(
        ~says_nothing("body") & (pl.col("body").str.strip_chars().fill_null("") != "")
    )
    excluded = [*DELETED_AUTHORS, *options.bots]
    responders = said.filter(
        ~pl.col("author").is_in(excluded).fill_null(False)
        & ~(pl.col("author") == pl.col("op")).fill_null(False)
        & ~pl.col("is_submitter").fill_null(False)
    ).with_columns(
        pl.when(pl.col("author").is_null())
        .then(pl.format("null:{}", "id"))
        .otherwise(pl.col("author"))
        .alias("responder_id"),
        unescape_html("body").alias("body"),
    )
    responses = (
        responders.sort("request_id", "created_utc", "id", nulls_last=True)
        .group_by("request_id", "responder_id", maintain_order=True)
        .agg(
            pl.col("body").str.join("\n\n").alias("text"),
            pl.col("author").is_null().any().alias("null_author"),
        )
        .with_columns(
            pl.format("{}/{}", "request_id", "responder_id").alias("response_id"),
            pl.int_range(pl.len()).over("request_id").alias("responder_index"),
        )
    )
    requests = (
        submissions.select(
            pl.col("id").alias("request_id"),
            unescape_html("title").alias("title"),
            unescape_html("selftext").alias("selftext"),
        )
        .select(
            "request_id",
            pl.concat_str(pl.col("title"), pl.col("selftext").fill_null(""), separator="\n\n")
            .str.strip_chars()
            .alias("prompt"),
        )
        .pipe(requests_table, dataset=dataset, source=source, split=split)
    )
    return ScrapedSource(
        requests=requests,
        responses=responses.select(
            pl.lit(dataset).alias("dataset"),
            "request_id",
            "response_id",
            "responder_index",
            "responder_id",
            "text",
            pl.when(pl.col("null_author")).then(pl.lit("null_author")).alias("responder_flag"),
        ),
        mentions=empty("mentions"),
        counters={
            "submissions": submissions.height,
            "comments": comments.height,
            "deleted_bodies": deleted_bodies,
            "empty_bodies": empty_bodies,
            **{f"quarantined.{k}": v for k, v in quarantine.counts.items()},
        },
        quarantine=quarantine.samples,
    )
