"""ProtoQA readers: crowdsourced dev, scraped dev and the simplified train set.

Each raw answer string with count k stands for k responders who each gave that one answer, so
n_x = Σ raw counts. Items are the authors' answer clusters (dev; the cluster's strings become
aliases) or answer strings grouped by key (train, `read_protoqa_train`). An answer left out of
every cluster keeps its responders, with an empty item set, because they still count in n_x.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import Field

from remark_data.errors import RemarkError
from remark_data.frames import with_normalized_key
from remark_data.stages.ground.matching import MatchStep, TitleMatcher, normalize_title
from remark_data.stages.scrape import (
    ScrapedSource,
    SourceFormat,
    mentions_table,
    read_jsonl,
    requests_table,
    responses_table,
)
from remark_data.stages.scrape.spec import SourceSpec

ANSWER_SCHEMA = {
    "request_id": pl.String,
    "answer_index": pl.Int64,
    "answer": pl.String,
    "count": pl.Int64,
}


def _expand(
    answers: pl.DataFrame, questions: pl.DataFrame, *, dataset: str, source: str, split: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """answers(request_id, answer_index, answer, count) -> requests, responses, mentions."""
    requests = requests_table(questions, dataset=dataset, source=source, split=split)
    responses = (
        answers.filter(pl.col("count") > 0)
        .with_columns(pl.int_ranges(0, "count").alias("k"))
        .explode("k")
        .with_columns(
            pl.format("{}/a{}/{}", "request_id", "answer_index", "k").alias("response_id"),
            pl.int_range(pl.len()).over("request_id").alias("responder_index"),
        )
    )
    mentions = mentions_table(
        responses,
        dataset=dataset,
        mention_id=pl.col("response_id") + "#0",
        kind=pl.lit("answer"),
        surface=pl.col("answer"),
    )
    return requests, responses_table(responses, dataset=dataset, text=pl.col("answer")), mentions


def _cluster_catalog(clusters: pl.DataFrame, answers: pl.DataFrame, dataset: str) -> pl.DataFrame:
    """Items from clusters(request_id, item_id, answer): title = the cluster's most given answer."""
    ranked = clusters.join(
        answers.select("request_id", "answer", "count"), on=["request_id", "answer"], how="left"
    )
    return (
        ranked.sort(
            ["request_id", "item_id", "count"], descending=[False, False, True], nulls_last=True
        )
        .group_by(["request_id", "item_id"], maintain_order=True)
        .agg(pl.col("answer").first().alias("title"), pl.col("answer").alias("aliases"))
        .select(
            pl.lit(dataset).alias("dataset"),
            "item_id",
            "title",
            pl.lit(None, dtype=pl.Int64).alias("year"),
            pl.lit(None, dtype=pl.String).alias("creator"),
            "aliases",
            pl.lit("answer").alias("kind"),
            pl.col("request_id").alias("scope"),
            pl.lit([], dtype=pl.List(pl.String)).alias("merged_ids"),
            pl.lit([], dtype=pl.List(pl.String)).alias("listed_by"),
        )
    )


_DevRows = tuple[tuple[str, str], list[tuple[str, int, str, int]], list[tuple[str, str, str]]]


def _dev_record(record: dict[str, Any]) -> _DevRows:
    """One dev question: (request_id, prompt), its raw answers and its clusters' answers."""
    request_id = record["metadata"]["id"]
    raw = record["answers"]["raw"].items()
    answers = [(request_id, i, answer, int(count)) for i, (answer, count) in enumerate(raw)]
    clusters = [
        (request_id, cluster_id, answer)
        for cluster_id, cluster in record["answers"]["clusters"].items()
        for answer in cluster["answers"]
    ]
    return (request_id, record["question"]["original"]), answers, clusters


def read_protoqa_dev(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    """`dev.crowdsourced.jsonl` or `dev.scraped.jsonl` (same layout)."""
    records = list(read_jsonl(path, _dev_record, what="a ProtoQA question record"))
    questions = pl.DataFrame(
        [question for question, _, _ in records],
        schema={"request_id": pl.String, "prompt": pl.String},
        orient="row",
    )
    answer_frame = pl.DataFrame(
        [row for _, answers, _ in records for row in answers], schema=ANSWER_SCHEMA, orient="row"
    )
    clusters = pl.DataFrame(
        [row for _, _, clusters in records for row in clusters],
        schema={"request_id": pl.String, "item_id": pl.String, "answer": pl.String},
        orient="row",
    )
    requests, responses, mentions = _expand(
        answer_frame, questions, dataset=dataset, source=source, split=split
    )
    catalog = _cluster_catalog(clusters, answer_frame, dataset)
    clustered = answer_frame.join(
        clusters.select("request_id", "answer").unique(),
        on=["request_id", "answer"],
        how="semi",
    )
    return ScrapedSource(
        requests=requests,
        responses=responses,
        mentions=mentions,
        catalog=catalog,
        counters={
            "responders_unclustered": int(responses.height - clustered["count"].sum()),
        },
    )


def _train_clusters(
    answers: pl.DataFrame, *, group_by: Sequence[MatchStep], questions: dict[str, str]
) -> tuple[pl.DataFrame, dict[str, int]]:
    """(request_id, item_id, answer) rows grouping each question's answer strings into items,
    and how many strings each matcher step folded into an item beyond the normalised key;
    `questions` (id -> text) are the matcher's context, as the rewards' rows give it."""
    keyed = with_normalized_key(answers, "answer").filter(pl.col("key") != "")
    by_key = keyed.select("request_id", "key").n_unique()
    folded: dict[str, int] = {}
    if tuple(group_by) != ("normalized",):
        keyed = keyed.sort(["request_id", "count", "answer_index"], descending=[False, True, False])
        groups, folded = _group_answers(
            keyed.select("request_id", "answer").rows(), group_by, questions
        )
        keyed = keyed.with_columns(pl.Series("key", groups, dtype=pl.String))
    clusters = keyed.select(
        "request_id", pl.format("{}:{}", "request_id", "key").alias("item_id"), "answer"
    )
    merged = by_key - keyed.select("request_id", "key").n_unique()
    return clusters, {"strings_merged": merged} | {
        f"strings_merged.{k}": v for k, v in folded.items()
    }


def _group_answers(
    answers: list[tuple[str, str]], steps: Sequence[MatchStep], questions: dict[str, str]
) -> tuple[list[str], dict[str, int]]:
    """The group key of each (request_id, answer), most frequent answers first: an answer the
    matcher chain grounds to one of its question's groups joins it, any other founds a group."""
    if "semantic" in steps:
        from remark_data.stages.ground.semantic import Embedder

        Embedder.load().embed([answer for _, answer in answers])  # one batched pass
    folded: dict[str, int] = dict.fromkeys(steps[1:], 0)
    keys: list[str] = []
    names: list[tuple[str, str, int | None]] = []
    current = None
    for request_id, answer in answers:
        if request_id != current:
            current, names = request_id, []
        matcher = TitleMatcher(names, steps=steps, context=questions.get(request_id, ""))
        group = matcher.match(answer)
        if group is None:
            group = normalize_title(answer)
        for step, count in matcher.matched_by.items():
            if count and step in folded:
                folded[step] += count
        names.append((group, answer, None))
        keys.append(group)
    return keys, folded


def read_protoqa_train(
    questions_path: Path,
    answers_path: Path,
    *,
    dataset: str,
    source: str,
    split: str,
    group_by: Sequence[MatchStep] = ("normalized",),
) -> ScrapedSource:
    """The simplified train set: ``{qid: question}`` and ``{qid: {answer: count}}``.

    Train has no clusters: a question's answer strings are grouped into items by their
    normalised key or, with more `group_by` steps, by the rewards' matcher chain ("his
    birthday", "birthdays" and "birthday" are one item; so are "car" and "automobile" with
    WordNet), so p̂ and union sizes mean on train what the dev clusters make them mean.
    `strings_merged` counts the strings folded beyond the normalised key, and
    `strings_merged.<step>` those each step folded.
    """
    try:
        question_map: dict[str, str] = json.loads(questions_path.read_text())
        answer_map: dict[str, dict[str, int]] = json.loads(answers_path.read_text())
    except json.JSONDecodeError as exc:
        raise RemarkError(f"ProtoQA train: malformed JSON ({exc.msg})") from exc
    missing = sorted(set(answer_map) - set(question_map))
    if missing:
        raise RemarkError(
            f"{answers_path}: {len(missing)} answer sets without a question, e.g. {missing[0]}"
        )
    answer_frame = pl.DataFrame(
        [
            (qid, index, answer, int(count))
            for qid, counts in answer_map.items()
            for index, (answer, count) in enumerate(counts.items())
        ],
        schema=ANSWER_SCHEMA,
        orient="row",
    )
    questions = pl.DataFrame(
        {"request_id": list(question_map), "prompt": list(question_map.values())}
    ).filter(pl.col("request_id").is_in(list(answer_map)))
    requests, responses, mentions = _expand(
        answer_frame, questions, dataset=dataset, source=source, split=split
    )
    clusters, merged = _train_clusters(answer_frame, group_by=group_by, questions=question_map)
    return ScrapedSource(
        requests=requests,
        responses=responses,
        mentions=mentions,
        catalog=_cluster_catalog(clusters, answer_frame, dataset),
        counters={
            "questions_without_answers": len(question_map) - len(answer_map),
        }
        | merged,
    )


class ProtoQADev(SourceSpec):
    """A ProtoQA dev file, crowdsourced or scraped (the same layout)."""

    format: Literal["protoqa_crowdsourced", "protoqa_scraped"]
    roles: ClassVar[tuple[str, ...]] = ("answers",)


class ProtoQATrain(SourceSpec):
    """The simplified ProtoQA train set: questions and answer counts in two JSON files."""

    format: Literal["protoqa_train_simplified"]
    roles: ClassVar[tuple[str, ...]] = ("questions", "answers")
    group_by: list[MatchStep] = Field(
        default=["normalized"],
        min_length=1,
        description="How answer strings become items: the matcher steps (as in [rewards] "
        "match_steps) that fold an answer into a more frequent one of its question.",
    )


def _read_dev(source: ProtoQADev, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_protoqa_dev(
        files["answers"], dataset=dataset, source=source.name, split=source.split
    )


def _read_train(source: ProtoQATrain, files: Mapping[str, Path], *, dataset: str) -> ScrapedSource:
    return read_protoqa_train(
        files["questions"],
        files["answers"],
        dataset=dataset,
        source=source.name,
        split=source.split,
        group_by=source.group_by,
    )


FORMATS = (
    SourceFormat(spec=ProtoQADev, read=_read_dev),
    SourceFormat(spec=ProtoQATrain, read=_read_train),
)
