"""The dataset card (``README.md`` of the Hub repository): the prose lives in ``card.md``, a
`string.Template`; this module computes what fills it (configs, licenses, statistics, sources).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from string import Template

import polars as pl

from remark_data import __version__
from remark_data.config import Project
from remark_data.pipeline import STAGE_NAMES
from remark_data.runner import RunFolder

#: The statistics columns the card shows, in this order.
CARD_STATS = (
    "dataset",
    "split",
    "n_requests",
    "n_responders",
    "responders_mean",
    "single_responder_share",
    "single_mention_share",
    "union_to_sum",
    "group_size",
    "prop2_bound",
)


def card_template() -> Template:
    """``card.md``, shipped inside the package."""
    return Template(
        resources.files("remark_data.publish").joinpath("card.md").read_text(encoding="utf-8")
    )


def markdown_table(frame: pl.DataFrame) -> str:
    """`frame` as a Markdown table, floats to 3 decimals."""
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = [
        "| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.iter_rows()
    ]
    return "\n".join([header, rule, *rows])


def card_sources(project: Project, pipelines: Sequence[str]) -> list[dict[str, str]]:
    """The input files of every stage of the pipelines' runs (name, sha256, license), each once,
    named and licensed from the source registry when it knows the checksum."""
    from remark_data.sources import load_registry

    registry = load_registry(project.sources_registry)
    by_sha = {entry.sha256: (name, entry.license) for name, entry in registry.items()}
    seen: dict[str, dict[str, str]] = {}
    for pipeline in pipelines:
        store = RunFolder(project.runs_dir / pipeline)
        for stage in STAGE_NAMES:
            manifest = store.manifest(stage)
            inputs = {} if manifest is None else manifest.inputs
            for role, value in inputs.items():
                name, license_ = by_sha.get(value.sha256, (f"{pipeline}:{role}", "see the source"))
                seen[value.sha256] = {"name": name, "sha256": value.sha256, "license": license_}
    return sorted(seen.values(), key=lambda s: s["name"])


def _configs_yaml(configs: Mapping[str, Mapping[str, int]]) -> str:
    lines = []
    for config, splits in configs.items():
        lines += [f"- config_name: {config}", "  data_files:"]
        for split in splits:
            lines += [f"  - split: {split}", f"    path: {config}/{split}-*.parquet"]
    return "\n".join(lines)


def render_card(
    *,
    repo_id: str,
    configs: Mapping[str, Mapping[str, int]],
    stats: pl.DataFrame,
    sources: Sequence[Mapping[str, str]],
    year_tolerance: Mapping[str, int],
    licenses: Mapping[str, str],
) -> str:
    """The card: `configs` = config -> split -> rows, `stats` the statistics of every dataset,
    `sources` as `card_sources` gives them, `year_tolerance` and `licenses` per dataset."""
    return card_template().substitute(
        configs_yaml=_configs_yaml(configs),
        name=repo_id.split("/")[-1],
        version=__version__,
        repo_id=repo_id,
        config_names=", ".join(configs),
        config_rows="\n".join(
            f"| `{c}` | {', '.join(f'{s} ({n:,})' for s, n in splits.items())} "
            f"| {licenses.get(c, 'see the sources')} |"
            for c, splits in configs.items()
        ),
        year_tolerances=", ".join(
            f"{name}: ±{years}" for name, years in sorted(year_tolerance.items())
        ),
        stats_table=markdown_table(stats.select(CARD_STATS)),
        source_rows="\n".join(
            f"| {s['name']} | `{s['sha256']}` | {s['license']} |" for s in sources
        ),
    )
