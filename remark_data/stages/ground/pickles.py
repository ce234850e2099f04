"""A pickle loader that refuses anything but lists, tuples, strings and ints, so a released
pickle (Rank-GRPO's catalog) cannot import or call code."""

from __future__ import annotations

import io
import pickle
import pickletools
from pathlib import Path

from remark_data.errors import RemarkError

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
        raise RemarkError(f"{path}: not a valid pickle ({exc})") from exc
