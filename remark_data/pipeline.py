"""The executor: a spec's enabled stages, in order, each skipped when unchanged.

The stage graph lives in the `Stage` records of `STAGES`; everything here derives from them:
which earlier stages a stage reads (its upstream fingerprints), which stage writes each table
(the DuckDB views), which files a stage's fingerprint covers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from remark_data.config import PipelineSpec, Project, load_pipeline_spec
from remark_data.errors import RemarkError
from remark_data.runner.context import RunResources, StageContext
from remark_data.runner.fingerprint import Fingerprint, code_digest
from remark_data.runner.folder import RunFolder
from remark_data.runner.stage import Progress, Stage, StageResult, run_stage
from remark_data.sources import Fetcher
from remark_data.stages import aggregate, stats
from remark_data.stages.extract import stage as extract
from remark_data.stages.ground import stage as ground
from remark_data.stages.scrape import stage as scrape

#: The stages in pipeline order. A new stage is a module with a `STAGE` record, listed here.
STAGES: tuple[Stage, ...] = (
    scrape.STAGE,
    extract.STAGE,
    ground.STAGE,
    aggregate.STAGE,
    stats.STAGE,
)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
#: table -> the stages that write it, in order (`mentions`: scrape's pre-extracted + extract's).
TABLE_STAGES: dict[str, tuple[str, ...]] = {
    table: tuple(s.name for s in STAGES if table in s.writes)
    for table in dict.fromkeys(t for s in STAGES for t in s.writes)
}

Event = StageResult | Progress


def pipeline_stages(spec: PipelineSpec) -> tuple[Stage, ...]:
    """The stages a spec runs (`extract` only when its sources have free text to read)."""
    return tuple(s for s in STAGES if s.enabled(spec))


def writers(spec: PipelineSpec, stage: Stage) -> dict[str, tuple[str, ...]]:
    """For each table `stage` reads: the enabled earlier stages that write it."""
    enabled = pipeline_stages(spec)
    earlier = enabled[: enabled.index(stage)]
    found: dict[str, tuple[str, ...]] = {
        t: tuple(s.name for s in earlier if t in s.writes) for t in stage.reads
    }
    if missing := [t for t, names in found.items() if not names]:
        raise RemarkError(f"{spec.name}: stage {stage.name!r} reads {missing[0]!r}, which no "
                          "earlier stage writes")  # fmt: skip
    return found


def upstream(spec: PipelineSpec, stage: Stage) -> tuple[str, ...]:
    """The earlier stages whose tables `stage` reads (their fingerprints enter its own).
    Ground also reads scrape's private scoped catalog; scrape is upstream of it anyway."""
    names = {name for names in writers(spec, stage).values() for name in names}
    return tuple(s.name for s in STAGES if s.name in names)


@dataclass(kw_only=True)
class PipelineRun:
    """One spec bound to a project: fingerprints and runs its stages under the run lock."""

    spec: PipelineSpec
    project: Project
    force: bool = False
    verify: bool = False  # hash every input again, ignoring the memo
    on_event: Callable[[Event], None] = lambda event: None
    resources: RunResources = field(init=False)
    folder: RunFolder = field(init=False)

    def __post_init__(self) -> None:
        fetcher = Fetcher(self.project, verify=self.verify)
        self.resources = RunResources(spec=self.spec, project=self.project, fetcher=fetcher)
        self.folder = RunFolder(self.project.runs_dir / self.spec.name)

    def _context(self, stage: Stage) -> StageContext:
        def progress(message: str) -> None:
            self.on_event(Progress(pipeline=self.spec.name, stage=stage.name, message=message))

        return StageContext(
            stage=stage.name,
            resources=self.resources,
            folder=self.folder,
            writers=writers(self.spec, stage),
            progress=progress,
        )

    def _fingerprint(self, stage: Stage, context: StageContext) -> Fingerprint:
        fingerprints = {}
        for name in upstream(self.spec, stage):
            manifest = self.folder.manifest(name)
            if manifest is None:
                raise RemarkError(
                    f"{self.spec.name}: stage {stage.name!r} needs {name!r}; run it first"
                )
            fingerprints[name] = manifest.fingerprint
        fetcher = self.resources.fetcher
        return Fingerprint(
            config_hash=self.spec.section_hash(*stage.sections),
            inputs={
                name: {"path": str(path), "sha256": fetcher.fingerprint(path)}
                for name, path in stage.inputs(context).items()
            },
            upstream=fingerprints,
            # The stage's own module alone (it may import its siblings), the modules it names
            # with everything they import, and the runner.
            code_digest=code_digest(
                [*stage.modules(self.spec), "remark_data.runner"],
                shallow=[stage.compute.__module__],
            ),
        )

    def run(self, *, stages: Sequence[str] | None = None) -> list[StageResult]:
        """Run `stages` (all enabled ones when None; none when empty), in pipeline order."""
        enabled = pipeline_stages(self.spec)
        names = [s.name for s in enabled]
        if unknown := [s for s in (stages or ()) if s not in names]:
            raise RemarkError(f"unknown stage {unknown[0]!r} (stages: {', '.join(names)})")
        chosen = [s for s in enabled if stages is None or s.name in stages]
        results: list[StageResult] = []
        if not chosen:
            return results
        dumped = self.spec.model_dump(mode="json")
        with self.folder.lock():
            for stage in chosen:
                context = self._context(stage)
                result = run_stage(
                    self.folder,
                    pipeline=self.spec.name,
                    stage=stage.name,
                    fingerprint=self._fingerprint(stage, context),
                    config={section: dumped[section] for section in stage.sections},
                    compute=partial(stage.compute, context),
                    force=self.force,
                )
                self.resources.fetcher.hashes.save()
                self.on_event(result)
                results.append(result)
        return results


def run_pipelines(
    project: Project,
    names: Sequence[str],
    *,
    stages: Sequence[str] | None = None,
    force: bool = False,
    verify: bool = False,
    on_event: Callable[[Event], None] = lambda event: None,
) -> dict[str, list[StageResult]]:
    """Run pipelines by name (``pipelines/<name>.toml``) or spec path. Every spec is loaded and
    checked before anything runs, so a typo in the last name costs nothing."""
    specs = [load_pipeline_spec(project.pipeline_path(name)) for name in names]
    return {
        spec.name: PipelineRun(
            spec=spec, project=project, force=force, verify=verify, on_event=on_event
        ).run(stages=stages)
        for spec in specs
    }
