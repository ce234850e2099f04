"""The spec models that formats extend: a source or catalog names its `format`, and gives each
file its format reads (its roles) as a registry id or a local path.

Pydantic only, so `remark_data.config` and every reader and catalog loader can import it
without a cycle. A format's own spec subclass narrows `format` to a ``Literal`` of its
name(s), sets `roles`, and adds its options; the pipeline spec's unions are keyed on `format`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SpecModel(BaseModel):
    """Every spec table: unknown keys are errors (a typo must not be ignored), values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class FileRefs(SpecModel):
    """A format and where its files come from: ids in ``data/sources.toml`` or local paths."""

    #: The file roles the format reads, set by each format's subclass.
    roles: ClassVar[tuple[str, ...]] = ()

    format: str
    files: dict[str, str] = Field(default_factory=dict, description="role -> source registry id")
    paths: dict[str, str] = Field(default_factory=dict, description="role -> local file or folder")

    @model_validator(mode="after")
    def _check_roles(self) -> Self:
        wanted, given = set(self.roles), set(self.files) | set(self.paths)
        if overlap := set(self.files) & set(self.paths):
            raise ValueError(f"roles {sorted(overlap)} given both as files and paths")
        if given != wanted:
            raise ValueError(
                f"format {self.format!r} needs files {sorted(wanted)}, got {sorted(given)}"
            )
        return self


class SourceSpec(FileRefs):
    """One ``[[sources]]`` entry; each source format subclasses it (`remark_data.stages.scrape`)."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    split: str = Field(pattern=r"^[a-z0-9_]+$")

    def input_files(self, files: Mapping[str, Path]) -> dict[str, Path]:
        """The files the reader reads, named, from the path of each role: what the scrape
        stage fingerprints. A format whose role is a folder it reads only part of (a month
        range of a dump archive) narrows it, so the rest is never hashed."""
        return dict(files)


def format_names(spec: type[FileRefs]) -> tuple[str, ...]:
    """The format names a spec class accepts: the values of its `format` ``Literal``."""
    names = get_args(spec.model_fields["format"].annotation)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{spec.__name__}.format must be a Literal of format names")
    return names
