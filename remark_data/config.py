"""Pipeline specs (``pipelines/<name>.toml``) and the project layout they run in.

A spec is declarative: which sources feed which split, which catalog items ground to, and the
settings of each stage. Loading validates it completely and reports the first problem as one line
naming the file, the key and what is wrong.

Examples
--------
>>> spec = load_pipeline_spec(Path("pipelines/protoqa.toml"))
>>> [s.name for s in spec.sources]
['dev-crowdsourced', 'dev-scraped', 'train']
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import (
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from remark_data.errors import RemarkError
from remark_data.stages.ground.catalogs import CATALOGS, CatalogSpec, NoCatalog
from remark_data.stages.ground.matching import MatchStep
from remark_data.stages.scrape.formats import SOURCE_FORMATS
from remark_data.stages.scrape.spec import SourceSpec
from remark_data.stages.scrape.spec import SpecModel as _Spec

GroundMethod = Literal["exact", "normalized", "fuzzy"]


def _default_catalog_format(value: Any) -> Any:
    """A ``[catalog]`` table without `format` is ``"none"``."""
    return {"format": "none", **value} if isinstance(value, dict) else value


# The unions are built from the registered formats, so mypy sees their base classes; pydantic
# picks the member by `format` and reports the member's own errors.
if TYPE_CHECKING:
    AnySourceSpec = SourceSpec
    AnyCatalogSpec = CatalogSpec
else:
    AnySourceSpec = Annotated[
        Union[tuple(dict.fromkeys(f.spec for f in SOURCE_FORMATS.values()))],  # noqa: UP007
        Field(discriminator="format"),
    ]
    AnyCatalogSpec = Annotated[
        Union[tuple(f.spec for f in CATALOGS.values())],  # noqa: UP007
        Field(discriminator="format"),
        BeforeValidator(_default_catalog_format),
    ]


class LLMSpec(_Spec):
    """An OpenAI-compatible endpoint; the API key comes from REMARK_LLM_API_KEY / OPENAI_API_KEY."""

    base_url: str
    base_urls: list[str] = Field(
        default_factory=list,
        description="More endpoints serving the same model: requests are spread round-robin over "
        "`base_url` and these (answers are cached by model, never by endpoint).",
    )
    model: str
    prompt_version: str = "v1"
    temperature: float = Field(default=0.0, ge=0, le=2)
    seed: int = 0
    concurrency: int = Field(default=4, ge=1, le=256)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    batch_chars: int = Field(
        default=0, ge=0, description="Comments up to this length go several per request (0: off)."
    )
    batch_size: int = Field(default=8, ge=1, le=64)
    max_tokens: int = Field(
        default=512, ge=16, le=32768, description="Reply token budget per comment."
    )
    few_shot: bool = Field(
        default=False, description="Hybrid only: two worked examples precede each comment."
    )
    backoff_base: float = Field(
        default=0.5, ge=0, le=60, description="Seconds before the first retry; doubles each time."
    )

    @model_serializer(mode="wrap")
    def _without_empty_endpoints(self, handler: SerializerFunctionWrapHandler) -> Any:
        # One endpoint dumps as before `base_urls` existed: its fingerprints stay unchanged.
        dumped = handler(self)
        if isinstance(dumped, dict) and not dumped.get("base_urls"):
            dumped.pop("base_urls", None)
        return dumped

    @property
    def endpoints(self) -> list[str]:
        """`base_url` first, then `base_urls`, each once."""
        return list(dict.fromkeys([self.base_url, *self.base_urls]))


class ExtractSpec(_Spec):
    method: Literal["gazetteer", "llm", "hybrid"] = Field(
        default="gazetteer",
        description="`gazetteer`: catalog titles found by lookup; `llm`: titles the model reads; "
        "`hybrid`: the model keeps or drops the gazetteer's candidates, gives their stance and "
        "adds the titles the gazetteer missed.",
    )
    kinds: list[str] = Field(min_length=1, description="Catalog kinds to look for.")
    seen: bool = Field(default=True, description="Titles in the request become seen items.")
    llm: LLMSpec | None = None

    @model_validator(mode="after")
    def _llm_settings(self) -> ExtractSpec:
        if self.method != "gazetteer" and self.llm is None:
            raise ValueError(
                f"method {self.method!r} needs an [extract.llm] table (base_url, model)"
            )
        return self


class GroundSpec(_Spec):
    methods: list[GroundMethod] = Field(
        default=["exact", "normalized"],
        min_length=1,
        description="Key types tried in order: `exact` raw text, `normalized` title.",
    )
    year_tolerance: int = Field(default=2, ge=0, le=10)
    fuzzy_cutoff: float = Field(default=90.0, ge=50, le=100, description="rapidfuzz ratio cutoff")
    creator_cutoff: float = Field(default=60.0, ge=0, le=100, description="author/artist check")
    disambiguate: bool = Field(default=True, description="Same-title rules: ground/disambiguate.py")
    min_prior: int = Field(default=2, ge=1, description="Prior rule: unambiguous mentions needed.")
    prior_ratio: float = Field(
        default=2.0, ge=1.0, description="Prior rule: how many times the runner-up's count."
    )
    listing_margin: int = Field(
        default=2, ge=1, description="Catalog rule: lead in `listed_by` over every other candidate."
    )


class RewardsSpec(_Spec):
    match_steps: list[MatchStep] = Field(
        default=["normalized"],
        min_length=1,
        description="How a trainer's reward (and `remark diagnose`) matches a generated line to a "
        "label item, in order: `normalized` key, `lemma` key, guarded `fuzzy` "
        "(remark_data.stages.ground.matching.MatchStep). Written into every label row.",
    )

    @model_validator(mode="after")
    def _normalized_first(self) -> RewardsSpec:
        if self.match_steps[0] != "normalized":
            raise ValueError("match_steps must start with 'normalized'")
        return self


class StatsSpec(_Spec):
    group_size: int = Field(default=8, ge=2, description="G for the Proposition 2 bound.")


class ExecutionSpec(_Spec):
    """Where the LLM requests of extract and the matching of ground run. Never part of a stage's
    fingerprint or manifest: both engines compute the same tables, so switching engines
    re-runs nothing (a stage only runs again when its inputs, config or code change)."""

    engine: Literal["local", "ray"] = Field(
        default="local",
        description="`local`: in this process; `ray`: LLM requests (method llm or hybrid) and "
        "grounding as Ray Data stages over batches, on a Ray cluster.",
    )
    address: str | None = Field(
        default=None,
        description="Ray cluster to join: `auto` (the one `ray start` runs on this machine) or "
        "`ray://HOST:10001`; unset: RAY_ADDRESS, else a local cluster started for the run.",
    )
    workers: int = Field(default=2, ge=1, le=4096, description="Ray actors per stage.")
    batch_size: int = Field(
        default=16, ge=1, le=4096, description="LLM requests per Ray batch (one actor call)."
    )
    ground_batch_size: int = Field(
        default=50_000, ge=1, description="Mentions per grounding batch on Ray."
    )


class PipelineSpec(_Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    description: str = ""
    sources: list[AnySourceSpec] = Field(min_length=1)
    catalog: AnyCatalogSpec = NoCatalog()
    extract: ExtractSpec | None = None
    ground: GroundSpec = GroundSpec()
    rewards: RewardsSpec = RewardsSpec()
    stats: StatsSpec = StatsSpec()
    # No stage lists `execution` in its sections: it is in no fingerprint (see ExecutionSpec).
    execution: ExecutionSpec = ExecutionSpec()

    @model_validator(mode="after")
    def _unique_sources(self) -> PipelineSpec:
        names = [s.name for s in self.sources]
        if len(names) != len(set(names)):
            raise ValueError(f"source names must be unique, got {names}")
        return self

    def section_hash(self, *sections: str) -> str:
        """sha256 of the named top-level sections, the config part of a stage fingerprint."""
        dumped = self.model_dump(mode="json")
        payload = json.dumps({s: dumped[s] for s in sections}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()


def _key(loc: tuple[int | str, ...]) -> str:
    """The spec key of an error location, without the format tag pydantic puts after a
    source (``sources.0.reddit_dump.bots``) or the catalog."""
    tag_at = {"sources": 2, "catalog": 1}.get(str(loc[0])) if loc else None
    parts = [p for i, p in enumerate(loc) if i != tag_at or p not in {*SOURCE_FORMATS, *CATALOGS}]
    return ".".join(str(p) for p in parts) or "(top level)"


def _format_validation_error(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    key, message = _key(first["loc"]), first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif first["type"] == "union_tag_invalid":
        key, message = f"{key}.format", f"Input should be one of {first['ctx']['expected_tags']}"
    elif first["type"] == "union_tag_not_found":
        key, message = f"{key}.format", "Field required"
    return f"{path}: {key}: {message}"


def load_pipeline_spec(path: Path) -> PipelineSpec:
    """Parse and validate a pipeline spec; raises `RemarkError` with a one-line message."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RemarkError(f"{path}: no such pipeline spec") from exc
    except IsADirectoryError as exc:
        raise RemarkError(f"{path}: is a folder, not a pipeline spec") from exc
    except UnicodeDecodeError as exc:
        raise RemarkError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise RemarkError(f"{path}: cannot read the spec ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RemarkError(f"{path}: malformed TOML: {exc}") from exc
    try:
        return PipelineSpec.model_validate(raw)
    except ValidationError as exc:
        raise RemarkError(_format_validation_error(path, exc)) from exc


@dataclass(frozen=True, kw_only=True)
class Project:
    """Where a project keeps its specs, source registry, runs and database.

    `root` is the project directory (the current one by default); `mirror` an offline copy of
    the public sources (``--mirror`` or ``REMARK_MIRROR``).
    """

    root: Path
    mirror: Path | None = None

    @classmethod
    def from_env(cls, *, root: Path | None = None, mirror: Path | None = None) -> Project:
        env_mirror = os.environ.get("REMARK_MIRROR")
        return cls(
            root=(root or Path.cwd()).resolve(),
            mirror=mirror or (Path(env_mirror) if env_mirror else None),
        )

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    @property
    def database_path(self) -> Path:
        return self.data_dir / "remark.duckdb"

    @property
    def sources_registry(self) -> Path:
        return self.data_dir / "sources.toml"

    def pipeline_path(self, name_or_path: str) -> Path:
        """A spec path: an existing file as given, else ``pipelines/<name>.toml``."""
        candidate = Path(name_or_path)
        if candidate.suffix == ".toml":
            return candidate if candidate.is_absolute() else self.root / candidate
        return self.root / "pipelines" / f"{name_or_path}.toml"
