"""The manifest every committed stage version carries (``manifest.json``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class InputFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    sha256: str


class Manifest(BaseModel):
    """Config and its hash, input checksums, upstream fingerprints, code digest, row counts,
    counters and timings of one stage version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pipeline: str
    stage: str
    fingerprint: str
    config: dict[str, Any]
    config_hash: str
    inputs: dict[str, InputFile]
    upstream: dict[str, str]
    package_version: str
    code_digest: str
    started_at: str
    compute_seconds: float
    tables: dict[str, int]
    counters: dict[str, int | float]

    @property
    def incomplete(self) -> bool:
        """Work left undone (e.g. transient LLM failures): the stage runs again."""
        return bool(self.counters.get("incomplete", 0))
