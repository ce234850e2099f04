"""Infrastructure that knows no particular stage: stage records, fingerprints, the run folder
(atomic versions, lock), manifests, and the context a stage runs in."""

from remark_data.runner.fingerprint import CODE_VERSION, Fingerprint, code_digest
from remark_data.runner.folder import RunFolder
from remark_data.runner.manifest import Manifest
from remark_data.runner.stage import (
    Progress,
    Stage,
    StageName,
    StageOutput,
    StageResult,
    run_stage,
)

__all__ = [
    "CODE_VERSION",
    "Fingerprint",
    "Manifest",
    "Progress",
    "RunFolder",
    "Stage",
    "StageName",
    "StageOutput",
    "StageResult",
    "code_digest",
    "run_stage",
]
