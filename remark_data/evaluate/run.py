"""`remark eval`: a run's labels scored against a gold file, per level."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from remark_data.config import Project
from remark_data.errors import RemarkError
from remark_data.evaluate.gold import gold_frame, merged_into, read_gold
from remark_data.evaluate.grounding import GoldMention, read_grounding_gold, score_grounding
from remark_data.evaluate.scoring import score
from remark_data.runner import RunFolder
from remark_data.schemas import MATCHED_STATUSES
from remark_data.stages.ground.matching import normalize_title


def evaluate_run(
    project: Project, pipeline: str, *, gold: Path, draws: int = 1000, seed: int = 0
) -> pl.DataFrame:
    """Precision and recall with 95% bootstrap intervals at label, comment and mention level
    (the last two need mentions that carry their `comment_id`); for a grounding gold (one
    object per mention, `remark_data.evaluate.grounding`), at grounding level; for an answer
    gold (`remark_data.evaluate.answers`), at answer level through the trainers' scorer."""
    folder = RunFolder(project.runs_dir / pipeline)
    try:
        labels = folder.read("aggregate", "labels")
        groundings = folder.read("ground", "groundings")
    except FileNotFoundError as exc:
        raise RemarkError(f"{pipeline}: no labels yet; run `remark run {pipeline}` first") from exc
    kind = _gold_kind(gold)
    if kind == "answer":
        from remark_data.adapters.trl import to_trl_dataset
        from remark_data.evaluate.answers import evaluate_answers, read_answer_gold

        answers = [a for a in read_answer_gold(gold) if a.dataset == pipeline]
        if not answers:
            raise RemarkError(f"{gold}: no gold answers for dataset {pipeline!r}")
        asked = labels.filter(pl.col("request_id").is_in([a.question_id for a in answers]))
        row = evaluate_answers(asked, list(to_trl_dataset(asked)), answers, draws=draws, seed=seed)
        return pl.DataFrame([row]).with_columns(pl.lit(pipeline).alias("dataset"))
    if kind == "mention":
        labelled = _grounding_gold(gold, pipeline, merged_into(folder.read("ground", "catalog")))
        row = score_grounding(groundings, labelled, draws=draws, seed=seed)
        return pl.DataFrame([row]).with_columns(pl.lit(pipeline).alias("dataset"))
    wanted = gold_frame([c for c in read_gold(gold) if c.dataset == pipeline])
    if wanted.is_empty():
        raise RemarkError(f"{gold}: no gold comments for dataset {pipeline!r}")
    # Gold labelled against an earlier catalog: ids merged since name the kept item.
    kept = merged_into(folder.read("ground", "catalog"))
    wanted = wanted.with_columns(pl.col("key").replace(kept))
    requests = wanted.select("request_id").unique()
    union = (
        labels.join(requests, on="request_id")
        .select("request_id", pl.col("union_item_ids").alias("key"))
        .explode("key")
        .drop_nulls()
    )
    rows = [score(union, wanted.select("request_id", "key"), level="label", by=["request_id"],
                  draws=draws, seed=seed)]  # fmt: skip
    mentions = _response_mentions(folder, groundings)
    if mentions is not None:
        by = ["request_id", "comment_id"]
        comments = wanted.select(*by).unique()
        in_gold = mentions.join(comments, on=by)
        items = in_gold.filter(pl.col("status").is_in(MATCHED_STATUSES)).select(*by, key="item_id")
        rows.append(score(items, wanted.select(*by, "key"), level="comment", by=by,
                          draws=draws, seed=seed))  # fmt: skip
        surfaces = in_gold.select(*by, key="surface_key")
        rows.append(score(surfaces, wanted.select(*by, key="surface_key"), level="mention",
                          by=by, draws=draws, seed=seed))  # fmt: skip
    return pl.DataFrame(rows).with_columns(pl.lit(pipeline).alias("dataset"))


def _grounding_gold(gold: Path, pipeline: str, kept: dict[str, str]) -> list[GoldMention]:
    """The pipeline's gold mentions, their ids merged since labelling named as the kept item."""
    labelled = [
        m.model_copy(
            update={
                "item_id": kept.get(m.item_id, m.item_id) if m.item_id else None,
                "alt_item_ids": [kept.get(i, i) for i in m.alt_item_ids],
            }
        )
        for m in read_grounding_gold(gold)
        if m.dataset == pipeline
    ]
    if not labelled:
        raise RemarkError(f"{gold}: no gold mentions for dataset {pipeline!r}")
    return labelled


def _gold_kind(gold: Path) -> str:
    """A grounding gold labels mentions (`mention_id`), a comment gold lists `titles`, an
    answer gold judges `answer`s."""
    try:
        with gold.open(encoding="utf-8") as lines:
            first = next((line for line in lines if line.strip()), "")
    except (OSError, UnicodeDecodeError) as exc:
        raise RemarkError(f"{gold}: cannot read the gold file ({exc})") from exc
    if '"judgement"' in first and '"answer"' in first:
        return "answer"
    return "mention" if '"mention_id"' in first and '"titles"' not in first else "comment"


def _response_mentions(folder: RunFolder, groundings: pl.DataFrame) -> pl.DataFrame | None:
    """Recommended response mentions with comment id, normalised surface, item and status; None
    when the run's mentions carry no comment ids."""
    frames = [folder.read(stage, "mentions") for stage in ("scrape", "extract")
              if (folder.stage_dir(stage) / "mentions.parquet").is_file()]  # fmt: skip
    mentions = pl.concat(frames, how="diagonal_relaxed")
    if "comment_id" not in mentions.columns:
        return None
    return (
        mentions.filter(
            (pl.col("role") == "response") & (pl.col("stance") == "recommended"),
            pl.col("comment_id").is_not_null(),
        )
        .join(groundings.select("mention_id", "item_id", "status"), on="mention_id")
        .with_columns(
            pl.col("surface")
            .map_elements(normalize_title, return_dtype=pl.String)
            .alias("surface_key")
        )
        .select("request_id", "comment_id", "surface_key", "item_id", "status")
    )
