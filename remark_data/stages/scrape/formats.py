"""The source formats: every reader module's ``FORMATS`` records, by format name.

To add a format, write a reader module that declares ``FORMATS`` and list it in `READERS`.
The modules are imported by name, not by import statements: a stage's code digest follows
import statements, and `remark_data.config` (which every stage reaches) needs this registry,
so importing the readers here would make an edit to any reader re-run every pipeline.
"""

from __future__ import annotations

import importlib
from typing import Any

from remark_data.stages.scrape import SourceFormat

#: The reader modules, one line each.
READERS = (
    "remark_data.stages.scrape.protoqa",
    "remark_data.stages.scrape.rank_grpo",
    "remark_data.stages.scrape.reddit_dumps",
    "remark_data.stages.scrape.reddit_monthly",
    "remark_data.stages.scrape.reddit_scraped",
    "remark_data.stages.scrape.musicrs",
)


def _registry() -> dict[str, SourceFormat[Any]]:
    registry: dict[str, SourceFormat[Any]] = {}
    for module in READERS:
        declared: tuple[SourceFormat[Any], ...] = importlib.import_module(module).FORMATS
        for record in declared:
            for name in record.names:
                if name in registry:
                    raise TypeError(f"source format {name!r} declared twice ({module})")
                registry[name] = record
    return registry


#: format name -> its record (a record may serve several names that read the same files).
SOURCE_FORMATS: dict[str, SourceFormat[Any]] = _registry()
