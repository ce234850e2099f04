"""What a stage's output depends on: config, input checksums, upstream fingerprints and code.

A stage's fingerprint covers its code: a digest of the syntax trees of the modules it runs and
every package module they import, so editing a stage re-runs it (and what reads its tables),
while a comment-only edit or a change to another stage's code does not.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from remark_data import __version__
from remark_data.schemas import json_schemas

# Outputs depend on the package version and on the table schemas: a schema change re-runs stages.
_SCHEMA_DIGEST = hashlib.sha256(repr(sorted(json_schemas().items())).encode()).hexdigest()[:12]
CODE_VERSION = f"{__version__}+schema.{_SCHEMA_DIGEST}"
_PACKAGE = "remark_data"


def _imported_modules(module: str, tree: ast.Module) -> Iterator[str]:
    """Package modules that `module` imports (absolute and relative, any depth)."""
    package = module if _is_package(module) else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            yield base
            # `from remark_data.stages.scrape import protoqa` imports a submodule, not a name.
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _is_package(module: str) -> bool:
    spec = importlib.util.find_spec(module)
    return spec is not None and spec.submodule_search_locations is not None


@functools.cache
def _module_tree(module: str) -> tuple[str, ast.Module] | None:
    """(digest of the syntax tree, tree) of a package module; None for anything else."""
    if module != _PACKAGE and not module.startswith(f"{_PACKAGE}."):
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(), filename=spec.origin)
    # ast.dump leaves out comments and formatting: only edits that can change behaviour count.
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest(), tree


def code_digest(modules: Iterable[str], *, shallow: Iterable[str] = ()) -> str:
    """sha256 over the syntax trees of `modules` and every package module they import, plus
    the `shallow` modules alone (a module that wires every stage, whose imports would make
    each stage depend on all the others).

    Examples
    --------
    >>> stats = code_digest(["remark_data.stages.stats"])
    >>> stats == code_digest(["remark_data.stages.stats"])
    True
    >>> stats == code_digest(["remark_data.stages.aggregate"])
    False
    """
    seen: dict[str, str] = {}
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module in seen:
            continue
        found = _module_tree(module)
        if found is None:
            continue
        seen[module], tree = found
        pending.extend(_imported_modules(module, tree))
    for module in shallow:  # a module also reached above keeps its imports
        if module not in seen and (found := _module_tree(module)) is not None:
            seen[module] = found[0]
    return hashlib.sha256(json.dumps(sorted(seen.items())).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Fingerprint:
    """Everything a stage's output depends on; equal fingerprints mean the stage can be skipped."""

    config_hash: str
    inputs: dict[str, dict[str, str]]  # role -> {"path", "sha256"}
    upstream: dict[str, str]  # stage -> fingerprint
    code_digest: str  # `code_digest` of the modules the stage runs
    code_version: str = field(default_factory=lambda: CODE_VERSION)

    @property
    def digest(self) -> str:
        payload = json.dumps(
            {
                "config": self.config_hash,
                "inputs": {k: v["sha256"] for k, v in sorted(self.inputs.items())},
                "upstream": dict(sorted(self.upstream.items())),
                "code": self.code_version,
                "code_digest": self.code_digest,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()
