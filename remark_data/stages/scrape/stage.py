"""Stage 1, scrape: every source of a spec read into requests, responses and (pre-extracted)
mentions, plus a catalog scoped to the dataset (open items such as songs)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec, SourceSpec
from remark_data.errors import RemarkError
from remark_data.runner.context import StageContext
from remark_data.runner.stage import Stage, StageOutput
from remark_data.schemas import conform
from remark_data.stages.scrape import ScrapedSource
from remark_data.stages.scrape.musicrs import read_musicrs
from remark_data.stages.scrape.protoqa import read_protoqa_dev, read_protoqa_train
from remark_data.stages.scrape.rank_grpo import read_rank_grpo_rows
from remark_data.stages.scrape.reddit_dumps import ThreadOptions, read_reddit_dump
from remark_data.stages.scrape.reddit_scraped import read_booksuggestions, read_suggestmeabook

#: The reader module of each source format (the scrape stage's code digest covers only those a
#: spec uses).
FORMAT_MODULES: dict[str, str] = {
    "protoqa_crowdsourced": "remark_data.stages.scrape.protoqa",
    "protoqa_scraped": "remark_data.stages.scrape.protoqa",
    "protoqa_train_simplified": "remark_data.stages.scrape.protoqa",
    "rank_grpo_rows": "remark_data.stages.scrape.rank_grpo",
    "reddit_dump": "remark_data.stages.scrape.reddit_dumps",
    "booksuggestions_json": "remark_data.stages.scrape.reddit_scraped",
    "suggestmeabook_jsonl": "remark_data.stages.scrape.reddit_scraped",
    "musicrs_jsonl": "remark_data.stages.scrape.musicrs",
}


def read_source(source: SourceSpec, files: dict[str, Path], *, dataset: str) -> ScrapedSource:
    """Read one source of a spec with its format's reader."""
    common = {"dataset": dataset, "source": source.name, "split": source.split}
    match source.format:
        case "protoqa_crowdsourced" | "protoqa_scraped":
            return read_protoqa_dev(files["answers"], **common)
        case "protoqa_train_simplified":
            return read_protoqa_train(files["questions"], files["answers"], **common)
        case "rank_grpo_rows":
            return read_rank_grpo_rows(files["rows"], **common)
        case "reddit_dump":
            options = ThreadOptions(
                subreddits=source.subreddits,
                since=source.since,
                until=source.until,
                include_replies=source.include_replies,
                bots=source.bots,
            )
            return read_reddit_dump(
                files["submissions"], files["comments"], options=options, **common
            )
        case "booksuggestions_json":
            return read_booksuggestions(files["posts"], **common)
        case "suggestmeabook_jsonl":
            return read_suggestmeabook(files["posts"], **common)
        case "musicrs_jsonl":
            return read_musicrs(files["threads"], **common)
    raise RemarkError(f"unknown source format {source.format!r}")


def _inputs(context: StageContext) -> dict[str, Path]:
    return {
        f"{source}.{role}": path
        for source, files in context.resources.source_files().items()
        for role, path in files.items()
    }


def scrape(context: StageContext) -> StageOutput:
    spec = context.spec
    files = context.resources.source_files()
    parts = [read_source(s, files[s.name], dataset=spec.name) for s in spec.sources]
    counters: dict[str, int | float] = {}
    for source, part in zip(spec.sources, parts, strict=True):
        counters.update({f"{source.name}.{k}": v for k, v in part.counters.items()})
        counters[f"{source.name}.requests"] = part.requests.height
    tables = {
        name: pl.concat([conform(getattr(p, name), name) for p in parts])
        for name in ("requests", "responses", "mentions", "catalog")
    }
    duplicated = tables["requests"].filter(pl.col("request_id").is_duplicated())
    if not duplicated.is_empty():
        raise RemarkError(
            f"{spec.name}: request id {duplicated['request_id'][0]!r} appears in two sources"
        )
    quarantine = [
        f"{s.name}: {line}"
        for s, p in zip(spec.sources, parts, strict=True)
        for line in p.quarantine
    ]
    extra = {"quarantine.txt": "\n".join(quarantine) + "\n"} if quarantine else {}
    return StageOutput(tables=tables, counters=counters, files=extra)


def _modules(spec: PipelineSpec) -> tuple[str, ...]:
    return tuple(sorted({FORMAT_MODULES[s.format] for s in spec.sources}))


# `catalog` here is the dataset's scoped catalog, private to this stage: the ground stage
# reads it and writes the authoritative one.
STAGE = Stage(
    name="scrape",
    reads=(),
    writes=("requests", "responses", "mentions"),
    sections=("name", "sources"),
    compute=scrape,
    modules=_modules,
    inputs=_inputs,
)
