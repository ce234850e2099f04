"""Decompressed blocks of whole lines from .zst (2 GiB windows), .gz or plain files, streamed.

Bytes are decompressed in small reads and cut at line ends into ~16 MiB blocks, so memory stays
bounded by a block, not the file. A truncated or corrupt ``.zst`` / ``.gz`` is an error naming
the compressed byte offset, never a silently shorter stream.
"""

from __future__ import annotations

import gzip
import queue
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

from remark_data.errors import RemarkError

ZSTD_MAX_WINDOW = 2**31  # the dumps are compressed with --long=31
# Parsed by polars in one call; bounds memory per step. Under glibc's 32 MiB ceiling for its
# adaptive mmap threshold, so each block reuses freed heap instead of faulting in fresh pages
# (32 MiB blocks made reading ~1.7x slower).
BLOCK_BYTES = 16 << 20
# Compressed bytes per decompress call: small, so an error's offset is precise and the outputs
# (~0.5 MiB) do not fragment the heap (1 MiB reads cost ~150 MiB more peak RSS).
READ_BYTES = 1 << 16


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
    # Chunks are kept as they come and joined once per block (one copy).
    parts: list[bytes] = []
    size = 0
    for chunk in decompressed_chunks(path):
        parts.append(chunk)
        size += len(chunk)
        if size < block_size:
            continue
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # no line end in this chunk: keep reading
            continue
        parts[-1] = chunk[:cut]
        yield b"".join(parts)
        rest = chunk[cut:]
        parts, size = ([rest], len(rest)) if rest else ([], 0)
    tail = b"".join(parts)
    if tail.strip():
        yield tail if tail.endswith(b"\n") else tail + b"\n"


def iter_blocks(path: Path, *, block_size: int = BLOCK_BYTES) -> Iterator[bytes]:
    """Decompressed blocks of whole lines (~`block_size` bytes each), never a line cut in two.

    Decompression runs in a thread one block ahead, so it overlaps with polars' parsing of the
    previous block (which releases the GIL; python-zstandard does not, so the prefilter's regex
    scan and the decompression take turns); at most two blocks wait in memory.
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
