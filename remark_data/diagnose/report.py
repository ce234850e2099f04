"""`remark diagnose` as one call: where the lists come from, the report, and where it is kept.

>>> Endpoint(base_url="http://127.0.0.1:8000/v1", model="tiny").name
'endpoint:tiny'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from remark_data.config import Project
from remark_data.diagnose.rollouts import Rollouts, diagnose_labels
from remark_data.diagnose.saved import save_diagnostics
from remark_data.errors import RemarkError
from remark_data.reports import read_labels


@dataclass(frozen=True, kw_only=True)
class RolloutsFile:
    """A policy's lists from a rollouts JSONL: ``{"request_id": ..., "completions": [...]}``."""

    path: Path

    @property
    def name(self) -> str:
        return f"rollouts:{self.path.name}"


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """G lists per request sampled from an OpenAI-compatible chat endpoint."""

    base_url: str
    model: str = "default"
    concurrency: int = 4

    @property
    def name(self) -> str:
        return f"endpoint:{self.model}"


@dataclass(frozen=True, kw_only=True)
class Popularity:
    """The baseline: K items drawn by how often responders named them in the split."""

    @property
    def name(self) -> str:
        return "popularity"


@dataclass(frozen=True, kw_only=True)
class ProtoQAPredictions:
    """ProtoQA's released ranked answers (human and fine-tuned GPT-2): G = 2 real lists."""

    @property
    def name(self) -> str:
        return "protoqa-human+gpt2"


Policy = RolloutsFile | Endpoint | Popularity | ProtoQAPredictions


def choose_policy(
    *,
    rollouts: Path | None = None,
    endpoint: str | None = None,
    model: str = "default",
    popularity: bool = False,
    protoqa_predictions: bool = False,
    concurrency: int = 4,
) -> Policy:
    """The one source of lists that `remark diagnose`'s options name, or a `RemarkError`."""
    chosen = [rollouts is not None, endpoint is not None, popularity, protoqa_predictions]
    if sum(chosen) != 1:
        raise RemarkError(
            "choose exactly one of --rollouts, --endpoint, --popularity, --protoqa-predictions"
        )
    if rollouts is not None:
        return RolloutsFile(path=rollouts)
    if endpoint is not None:
        return Endpoint(base_url=endpoint, model=model, concurrency=concurrency)
    return ProtoQAPredictions() if protoqa_predictions else Popularity()


@dataclass(frozen=True, kw_only=True)
class DiagnosisReport:
    """The diagnostics of one policy's lists, one row per (dataset, split) of `frame`, and the
    file they were kept in."""

    policy: str
    frame: pl.DataFrame
    saved: Path

    def metrics(self) -> pl.DataFrame:
        """One row per metric, one column per ``dataset/split`` (per-decile lists as text)."""
        columns = [f"{d}/{s}" for d, s in self.frame.select("dataset", "split").iter_rows()]
        frame = self.frame.drop("dataset", "split", "policy", "verdict")
        as_text = [
            pl.col(name).cast(pl.List(pl.String)).list.join(" ").alias(name)
            for name, dtype in frame.schema.items()
            if isinstance(dtype, pl.List)
        ]
        return frame.with_columns(as_text).transpose(
            include_header=True, header_name="metric", column_names=columns
        )

    def verdicts(self) -> list[tuple[str, str]]:
        """(``dataset/split``, a sentence on what union rewards remove) per row."""
        return [
            (f"{row['dataset']}/{row['split']}", row["verdict"])
            for row in self.frame.iter_rows(named=True)
        ]


def _policy_lists(
    project: Project, policy: Policy, labels: pl.DataFrame, *, group_size: int
) -> Rollouts | None:
    """The policy's raw completions per request; None for the popularity sampler."""
    if isinstance(policy, RolloutsFile):
        from remark_data.diagnose.rollouts import read_rollouts

        return read_rollouts(policy.path)
    if isinstance(policy, ProtoQAPredictions):
        from remark_data.diagnose.rollouts import protoqa_prediction_rollouts
        from remark_data.sources import Fetcher

        fetcher = Fetcher(project)
        return protoqa_prediction_rollouts(
            fetcher.fetch("protoqa-dev-predictions-human"),
            fetcher.fetch("protoqa-dev-predictions-gpt2"),
        )
    if isinstance(policy, Endpoint):
        from remark_data.diagnose.endpoint import sample_endpoint

        prompts = dict(zip(labels["request_id"], labels["prompt"], strict=True))
        return sample_endpoint(
            prompts,
            base_url=policy.base_url,
            model=policy.model,
            group_size=group_size,
            concurrency=policy.concurrency,
        )
    return None


def run_diagnosis(
    project: Project,
    pipeline: str,
    *,
    policy: Policy,
    group_size: int = 8,
    ranks: int | None = None,
    split: str | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> DiagnosisReport:
    """How much responder noise union rewards remove for `policy`'s lists over a pipeline's
    labels (only `split`, at most `limit` requests); the report is kept under the run too.

    `group_size` (G) is the number of lists per request the popularity sampler draws and an
    endpoint is asked for; `ranks` (K) defaults to the lists' own length.
    """
    labels = read_labels(project, pipeline)
    if split:
        labels = labels.filter(pl.col("split") == split)
    if limit:
        labels = labels.head(limit)
    lists = _policy_lists(project, policy, labels, group_size=group_size)
    frame = diagnose_labels(
        labels,
        policy=policy.name,
        ranks=ranks,
        group_size=group_size,
        seed=seed,
        rollouts=lists,
    )
    saved = save_diagnostics(project.runs_dir, pipeline, frame)
    return DiagnosisReport(policy=policy.name, frame=frame, saved=saved)
