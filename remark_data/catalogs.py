"""Catalog loaders into the `catalog` table. Item ids are derived from content, so they are
stable across runs: ``<catalog>:<normalised-title-slug>:<year>``.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from pathlib import Path

import polars as pl

from remark_data.errors import RemarkError
from remark_data.frames import with_normalized_key

# Opcodes that only build lists, tuples, strings and ints (plus framing and memo bookkeeping).
# No GLOBAL/STACK_GLOBAL/REDUCE/BUILD/INST/OBJ: nothing that names or calls an object.
_SAFE_OPCODES = frozenset(
    {
        "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
        "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET",
        "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
        "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
        "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
        "STRING", "BINSTRING", "SHORT_BINSTRING",
        "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
    }
)  # fmt: skip


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def load_restricted_pickle(path: Path) -> object:
    """Unpickle a file made only of lists, tuples, strings and ints; refuse anything else.

    The opcode stream is checked before anything is built, so a pickle that would import or
    call code is refused without running a single instruction of it.
    """
    data = path.read_bytes()
    try:
        for opcode, _, position in pickletools.genops(data):
            if opcode.name not in _SAFE_OPCODES:
                raise RemarkError(
                    f"{path}: refusing pickle: opcode {opcode.name} at byte {position} "
                    "(only lists, tuples, strings and ints are accepted)"
                )
        return _NoGlobals(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, ValueError, EOFError) as exc:
        raise RemarkError(f"{path}: not a valid pickle ({exc})") from None


def load_rank_grpo_catalog(path: Path, *, dataset: str) -> pl.DataFrame:
    """Rank-GRPO's ``gt_catalog.pkl``: an iterable of (title, year) with int years."""
    raw = load_restricted_pickle(path)
    if not isinstance(raw, list | tuple) or not all(
        isinstance(entry, tuple | list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], int)
        for entry in raw
    ):
        raise RemarkError(f"{path}: expected a list of (title, year) pairs with int years")
    frame = pl.DataFrame(
        {"title": [e[0] for e in raw], "year": [e[1] for e in raw]},
        schema={"title": pl.String, "year": pl.Int64},
    )
    frame = with_normalized_key(frame, "title")
    return (
        frame.with_columns(
            pl.format("rg:{}:{}", pl.col("key").str.replace_all(" ", "-"), "year").alias("item_id")
        )
        # Spellings that share a key and year ("Se7en"/"Se7en.") are one item; the rest are aliases.
        .group_by("item_id", maintain_order=True)
        .agg(
            pl.col("title").first(),
            pl.col("year").first(),
            pl.col("title").slice(1).alias("aliases"),
        )
        .select(
            pl.lit(dataset).alias("dataset"),
            "item_id",
            "title",
            "year",
            pl.lit(None, dtype=pl.String).alias("creator"),
            "aliases",
            pl.lit(None, dtype=pl.String).alias("scope"),
        )
    )


def load_catalog(fmt: str, files: dict[str, Path], *, dataset: str) -> pl.DataFrame | None:
    """The global catalog a spec names, or None for `format = "none"`."""
    if fmt == "none":
        return None
    if fmt == "rank_grpo_pickle":
        return load_rank_grpo_catalog(files["catalog"], dataset=dataset)
    raise RemarkError(f"unknown catalog format {fmt!r}")
