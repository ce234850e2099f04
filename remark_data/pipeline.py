"""Runs a pipeline spec through its stages: scrape → [extract] → ground → aggregate → stats.

Each stage is a function of (spec, upstream tables, input files) -> `StageOutput`, wrapped by
`run_stage` for fingerprinting, skipping and atomic commits.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from remark_data.config import PipelineSpec, Project, SourceSpec
from remark_data.errors import RemarkError
from remark_data.runner import (
    Fingerprint,
    RunFolder,
    StageOutput,
    StageResult,
    code_digest,
    run_stage,
)
from remark_data.schemas import conform
from remark_data.sources import Fetcher
from remark_data.stages.aggregate import build_labels
from remark_data.stages.extract.gazetteer import Gazetteer, gazetteer_mentions
from remark_data.stages.extract.llm import LLMSettings, extract_with_llm, llm_mentions
from remark_data.stages.ground.catalogs import load_catalog
from remark_data.stages.ground.grounding import ground_mentions
from remark_data.stages.scrape import ScrapedSource
from remark_data.stages.scrape.musicrs import read_musicrs
from remark_data.stages.scrape.protoqa import read_protoqa_dev, read_protoqa_train
from remark_data.stages.scrape.rank_grpo import read_rank_grpo_rows
from remark_data.stages.scrape.reddit_dumps import ThreadOptions, read_reddit_dump
from remark_data.stages.scrape.reddit_scraped import read_booksuggestions, read_suggestmeabook
from remark_data.stages.stats import label_stats

STAGES = ("scrape", "extract", "ground", "aggregate", "stats")

#: Which spec sections each stage's output depends on.
SECTIONS: dict[str, tuple[str, ...]] = {
    "scrape": ("name", "sources"),
    "extract": ("catalog", "extract"),
    "ground": ("catalog", "ground"),
    "aggregate": (),
    "stats": ("stats",),
}


#: The reader module of each source format (the scrape stage runs only those a spec uses).
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


def stage_code_digest(spec: PipelineSpec, stage: str) -> str:
    """`code_digest` of what a stage runs: its modules with their package imports, the runner,
    and this module alone (it holds the stage bodies but imports every stage)."""
    own: tuple[str, ...]
    match stage:
        case "scrape":
            own = tuple(sorted({FORMAT_MODULES[s.format] for s in spec.sources}))
        case "extract":
            method = "gazetteer" if spec.extract is None else spec.extract.method
            extractor = (
                "remark_data.stages.extract.gazetteer"
                if method == "gazetteer"
                else "remark_data.stages.extract.llm"
            )
            own = ("remark_data.stages.ground.catalogs", extractor)
        case "ground":
            own = ("remark_data.stages.ground.catalogs", "remark_data.stages.ground.grounding")
        case "aggregate":
            own = ("remark_data.stages.aggregate",)
        case _:
            own = ("remark_data.stages.stats",)
    return code_digest([*own, "remark_data.runner"], shallow=[__name__])


def pipeline_stages(spec: PipelineSpec) -> tuple[str, ...]:
    """The stages a spec runs: `extract` only when its sources have free text to read."""
    return tuple(s for s in STAGES if s != "extract" or spec.extract is not None)


def upstream(spec: PipelineSpec, stage: str) -> tuple[str, ...]:
    """Which stages' tables `stage` reads."""
    extract = ("extract",) if spec.extract is not None else ()
    return {
        "scrape": (),
        "extract": ("scrape",),
        "ground": ("scrape", *extract),
        "aggregate": ("scrape", "ground"),
        "stats": ("aggregate",),
    }[stage]


def read_source(spec: PipelineSpec, source: SourceSpec, files: dict[str, Path]) -> ScrapedSource:
    common = {"dataset": spec.name, "source": source.name, "split": source.split}
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


@dataclass(kw_only=True)
class PipelineRun:
    """One spec bound to a project: resolves inputs, fingerprints and runs stages."""

    spec: PipelineSpec
    project: Project
    force: bool = False
    verify: bool = False  # hash every input again, ignoring the memo
    on_stage: Callable[[StageResult], None] | None = None

    def __post_init__(self) -> None:
        self.fetcher = Fetcher(self.project, verify=self.verify)
        self.store = RunFolder(self.project.runs_dir / self.spec.name)

    # -- inputs -----------------------------------------------------------------------------
    def _source_files(self) -> dict[str, dict[str, Path]]:
        return {
            s.name: self.fetcher.resolve(files=s.files, paths=s.paths) for s in self.spec.sources
        }

    def _catalog_files(self) -> dict[str, Path]:
        return self.fetcher.resolve(files=self.spec.catalog.files, paths=self.spec.catalog.paths)

    def _inputs(self, stage: str) -> dict[str, dict[str, str]]:
        named: dict[str, Path] = {}
        if stage == "scrape":
            for source, files in self._source_files().items():
                named.update({f"{source}.{role}": path for role, path in files.items()})
        elif stage in ("ground", "extract"):
            named.update({f"catalog.{role}": p for role, p in self._catalog_files().items()})
        return {
            name: {"path": str(path), "sha256": self.fetcher.fingerprint(path)}
            for name, path in named.items()
        }

    def _fingerprint(self, stage: str) -> Fingerprint:
        fingerprints = {}
        for name in upstream(self.spec, stage):
            manifest = self.store.manifest(name)
            if manifest is None:
                raise RemarkError(f"{self.spec.name}: stage {stage!r} needs {name!r}; run it first")
            fingerprints[name] = manifest["fingerprint"]
        return Fingerprint(
            config_hash=self.spec.section_hash(*SECTIONS[stage]),
            inputs=self._inputs(stage),
            upstream=fingerprints,
            code_digest=stage_code_digest(self.spec, stage),
        )

    # -- stages -----------------------------------------------------------------------------
    def _scrape(self) -> StageOutput:
        files = self._source_files()
        parts = [read_source(self.spec, s, files[s.name]) for s in self.spec.sources]
        stats: dict[str, int | float] = {}
        for source, part in zip(self.spec.sources, parts, strict=True):
            stats.update({f"{source.name}.{k}": v for k, v in part.counters.items()})
            stats[f"{source.name}.requests"] = part.requests.height
        tables = {
            name: pl.concat([conform(getattr(p, name), name) for p in parts])
            for name in ("requests", "responses", "mentions", "catalog")
        }
        duplicated = tables["requests"].filter(pl.col("request_id").is_duplicated())
        if not duplicated.is_empty():
            raise RemarkError(
                f"{self.spec.name}: request id {duplicated['request_id'][0]!r} "
                "appears in two sources"
            )
        quarantine = [
            f"{s.name}: {line}"
            for s, p in zip(self.spec.sources, parts, strict=True)
            for line in p.quarantine
        ]
        extra = {"quarantine.txt": "\n".join(quarantine) + "\n"} if quarantine else {}
        return StageOutput(tables=tables, counters=stats, files=extra)

    def _global_catalog(self) -> pl.DataFrame | None:
        loaded = load_catalog(
            self.spec.catalog.format, self._catalog_files(), dataset=self.spec.name
        )
        return None if loaded is None else conform(loaded, "catalog")

    def _extract(self) -> StageOutput:
        assert self.spec.extract is not None
        if self.spec.extract.method == "llm":
            return self._extract_llm()
        catalog = self._global_catalog()
        if catalog is None:
            raise RemarkError(f"{self.spec.name}: the gazetteer extractor needs a catalog")
        wanted = catalog.filter(pl.col("kind").is_in(self.spec.extract.kinds))
        names = wanted.select("item_id", pl.concat_list("title", "aliases").alias("name")).explode(
            "name"
        )
        gazetteer = Gazetteer(names.drop_nulls().iter_rows())
        kind = self.spec.extract.kinds[0] if len(self.spec.extract.kinds) == 1 else None
        responses = self.store.read("scrape", "responses")
        frames = [gazetteer_mentions(responses, gazetteer, role="response", kind=kind)]
        if self.spec.extract.seen:
            requests = self.store.read("scrape", "requests").select(
                "dataset",
                "request_id",
                pl.lit(None, dtype=pl.String).alias("response_id"),
                pl.lit(None, dtype=pl.Int64).alias("responder_index"),
                pl.col("prompt").alias("text"),
            )
            frames.append(gazetteer_mentions(requests, gazetteer, role="seen", kind=kind))
        mentions = pl.concat([conform(f, "mentions") for f in frames])
        return StageOutput(
            tables={"mentions": mentions},
            counters={"responses_scanned": responses.height, "mentions": mentions.height},
        )

    def _extract_llm(self) -> StageOutput:
        spec = self.spec.extract
        assert spec is not None and spec.llm is not None
        settings = LLMSettings(
            base_url=spec.llm.base_url,
            model=spec.llm.model,
            kind=spec.kinds[0],
            prompt_version=spec.llm.prompt_version,
            temperature=spec.llm.temperature,
            seed=spec.llm.seed,
            concurrency=spec.llm.concurrency,
            timeout=spec.llm.timeout,
            max_retries=spec.llm.max_retries,
            batch_chars=spec.llm.batch_chars,
            batch_size=spec.llm.batch_size,
        )
        responses = self.store.read("scrape", "responses").select(
            "dataset", "request_id", "response_id", "responder_index", "text"
        )
        frames = [responses.with_columns(pl.lit("response").alias("role"))]
        if spec.seen:
            frames.append(
                self.store.read("scrape", "requests").select(
                    "dataset",
                    "request_id",
                    pl.lit(None, dtype=pl.String).alias("response_id"),
                    pl.lit(None, dtype=pl.Int64).alias("responder_index"),
                    pl.col("prompt").alias("text"),
                    pl.lit("seen").alias("role"),
                )
            )
        texts = pl.concat(frames).filter(pl.col("text").str.strip_chars() != "")
        summary = extract_with_llm(
            dict(enumerate(texts["text"])),
            settings,
            cache_path=self.project.data_dir / "cache" / "llm" / "extractions.sqlite",
        )
        print(summary.line(), file=sys.stderr)
        mentions = llm_mentions(texts, summary, settings)
        stats: dict[str, int | float] = {
            "texts": summary.texts,
            "unique_texts": summary.unique_texts,
            "cache_hits": summary.cache_hits,
            "requests": summary.requests,
            "retries": summary.retries,
            "ok": summary.ok,
            "permanent_failures": summary.permanent,
            "transient_failures": summary.transient,
            "dropped_titles": summary.dropped_titles,
            "prompt_tokens": summary.prompt_tokens,
            "completion_tokens": summary.completion_tokens,
            "incomplete": summary.transient,
        }
        return StageOutput(tables={"mentions": conform(mentions, "mentions")}, counters=stats)

    def _ground(self) -> StageOutput:
        scoped = self.store.read("scrape", "catalog")
        global_catalog = self._global_catalog()
        catalog = scoped if global_catalog is None else pl.concat([global_catalog, scoped])
        mentions = self.store.read("scrape", "mentions")
        if self.spec.extract is not None:
            mentions = pl.concat([mentions, self.store.read("extract", "mentions")])
        groundings = ground_mentions(
            mentions,
            catalog,
            methods=self.spec.ground.methods,
            year_tolerance=self.spec.ground.year_tolerance,
            fuzzy_cutoff=self.spec.ground.fuzzy_cutoff,
            creator_cutoff=self.spec.ground.creator_cutoff,
        )
        by_status = groundings.group_by("status").len()
        stats: dict[str, int | float] = {
            f"mentions.{status}": n for status, n in by_status.iter_rows()
        }
        stats["catalog_items"] = catalog.height
        return StageOutput(tables={"catalog": catalog, "groundings": groundings}, counters=stats)

    def _aggregate(self) -> StageOutput:
        labels, counters = build_labels(
            requests=self.store.read("scrape", "requests"),
            responses=self.store.read("scrape", "responses"),
            groundings=self.store.read("ground", "groundings"),
            catalog=self.store.read("ground", "catalog"),
        )
        return StageOutput(tables={"labels": labels}, counters=dict(counters))

    def _stats(self) -> StageOutput:
        labels = self.store.read("aggregate", "labels")
        stats = label_stats(labels, group_size=self.spec.stats.group_size)
        return StageOutput(
            tables={"stats": stats},
            files={"stats.json": json.dumps(stats.to_dicts(), indent=2) + "\n"},
        )

    def run(self, *, stages: tuple[str, ...] | None = None) -> list[StageResult]:
        available = pipeline_stages(self.spec)
        stages = available if stages is None else stages
        unknown = [s for s in stages if s not in available]
        if unknown:
            raise RemarkError(f"unknown stage {unknown[0]!r} (stages: {', '.join(available)})")
        compute = {
            "scrape": self._scrape,
            "extract": self._extract,
            "ground": self._ground,
            "aggregate": self._aggregate,
            "stats": self._stats,
        }
        results: list[StageResult] = []
        if not stages:
            return results
        with self.store.lock():
            for stage in available:
                if stage not in stages:
                    continue
                result = run_stage(
                    self.store,
                    pipeline=self.spec.name,
                    stage=stage,
                    fingerprint=self._fingerprint(stage),
                    config={s: self.spec.model_dump(mode="json")[s] for s in SECTIONS[stage]},
                    compute=compute[stage],
                    force=self.force,
                )
                self.fetcher.hashes.save()
                if self.on_stage is not None:
                    self.on_stage(result)
                results.append(result)
        return results
