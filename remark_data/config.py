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
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from remark_data.errors import RemarkError

SourceFormat = Literal[
    "protoqa_crowdsourced",
    "protoqa_scraped",
    "protoqa_train_simplified",
    "rank_grpo_rows",
    "reddit_dump",
    "booksuggestions_json",
    "suggestmeabook_jsonl",
    "musicrs_jsonl",
]
CatalogFormat = Literal["none", "rank_grpo_pickle", "movies_merged", "goodbooks", "music"]
GroundMethod = Literal["exact", "normalized", "fuzzy"]

#: The files each source format reads, by role.
FORMAT_FILES: dict[str, tuple[str, ...]] = {
    "protoqa_crowdsourced": ("answers",),
    "protoqa_scraped": ("answers",),
    "protoqa_train_simplified": ("questions", "answers"),
    "rank_grpo_rows": ("rows",),
    "reddit_dump": ("submissions", "comments"),
    "booksuggestions_json": ("posts",),
    "suggestmeabook_jsonl": ("posts",),
    "musicrs_jsonl": ("threads",),
    "rank_grpo_pickle": ("catalog",),
    "movies_merged": ("movielens_movies", "movielens_links", "rank_grpo", "reddit_movie_v1"),
    "goodbooks": ("books",),
    "music": ("artists", "albums"),
    "none": (),
}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileRefs(_Spec):
    """Where a source's files come from: ids in ``data/sources.toml`` or local paths."""

    files: dict[str, str] = Field(default_factory=dict, description="role -> source registry id")
    paths: dict[str, str] = Field(default_factory=dict, description="role -> local file or folder")

    def _check_roles(self, fmt: str) -> None:
        wanted = set(FORMAT_FILES[fmt])
        given = set(self.files) | set(self.paths)
        if overlap := set(self.files) & set(self.paths):
            raise ValueError(f"roles {sorted(overlap)} given both as files and paths")
        if given != wanted:
            raise ValueError(f"format {fmt!r} needs files {sorted(wanted)}, got {sorted(given)}")


class SourceSpec(FileRefs):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    format: SourceFormat
    split: str = Field(pattern=r"^[a-z0-9_]+$")
    # Reddit dumps only: which threads and comments to keep.
    subreddits: list[str] = Field(default_factory=list)
    since: date | None = None
    until: date | None = None
    include_replies: bool = Field(default=False, description="Keep replies, not only top level.")
    bots: list[str] = Field(
        default=["AutoModerator"], description="Authors that are not responders."
    )

    @model_validator(mode="after")
    def _roles(self) -> SourceSpec:
        self._check_roles(self.format)
        return self


class CatalogSpec(FileRefs):
    format: CatalogFormat = "none"

    @model_validator(mode="after")
    def _roles(self) -> CatalogSpec:
        self._check_roles(self.format)
        return self


class LLMSpec(_Spec):
    """An OpenAI-compatible endpoint; the API key comes from REMARK_LLM_API_KEY / OPENAI_API_KEY."""

    base_url: str
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


class ExtractSpec(_Spec):
    method: Literal["gazetteer", "llm"] = "gazetteer"
    kinds: list[str] = Field(min_length=1, description="Catalog kinds to look for.")
    seen: bool = Field(default=True, description="Titles in the request become seen items.")
    llm: LLMSpec | None = None

    @model_validator(mode="after")
    def _llm_settings(self) -> ExtractSpec:
        if self.method == "llm" and self.llm is None:
            raise ValueError("method 'llm' needs an [extract.llm] table (base_url, model)")
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


class StatsSpec(_Spec):
    group_size: int = Field(default=8, ge=2, description="G for the Proposition 2 bound.")


class PipelineSpec(_Spec):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    description: str = ""
    sources: list[SourceSpec] = Field(min_length=1)
    catalog: CatalogSpec = CatalogSpec()
    extract: ExtractSpec | None = None
    ground: GroundSpec = GroundSpec()
    stats: StatsSpec = StatsSpec()

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


def _format_validation_error(path: Path, error: ValidationError) -> str:
    first = error.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        message = "unknown key"
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
