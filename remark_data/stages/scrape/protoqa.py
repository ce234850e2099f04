"""ProtoQA readers: crowdsourced dev, scraped dev and the simplified train set.

Each raw answer string with count k stands for k responders who each gave that one answer, so
n_x = Σ raw counts. Items are the authors' answer clusters (dev; the cluster's strings become
aliases) or normalised answer strings (train). An answer left out of every cluster keeps its
responders, with an empty item set, because they still count in n_x.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from remark_data.errors import RemarkError
from remark_data.frames import with_normalized_key
from remark_data.stages.scrape import ScrapedSource, requests_table


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise RemarkError(f"{path}:{number}: malformed JSON ({exc.msg})") from exc


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
    mentions = responses.select(
        pl.lit(dataset).alias("dataset"),
        "request_id",
        "response_id",
        "responder_index",
        (pl.col("response_id") + "#0").alias("mention_id"),
        pl.lit("response").alias("role"),
        pl.lit("answer").alias("kind"),
        pl.col("answer").alias("surface"),
        pl.lit(None, dtype=pl.Int64).alias("year"),
        pl.lit(None, dtype=pl.String).alias("creator"),
        pl.lit("recommended").alias("stance"),
        pl.lit("source").alias("extractor"),
    )
    responses = responses.select(
        pl.lit(dataset).alias("dataset"),
        "request_id",
        "response_id",
        "responder_index",
        pl.col("response_id").alias("responder_id"),
        pl.col("answer").alias("text"),
        pl.lit(None, dtype=pl.String).alias("responder_flag"),
    )
    return requests, responses, mentions


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
        )
    )


def read_protoqa_dev(path: Path, *, dataset: str, source: str, split: str) -> ScrapedSource:
    """`dev.crowdsourced.jsonl` or `dev.scraped.jsonl` (same layout)."""
    questions: dict[str, list[Any]] = {"request_id": [], "prompt": []}
    answers: dict[str, list[Any]] = {
        "request_id": [],
        "answer_index": [],
        "answer": [],
        "count": [],
    }
    clusters: dict[str, list[Any]] = {"request_id": [], "item_id": [], "answer": []}
    for record in _read_jsonl(path):
        try:
            request_id = record["metadata"]["id"]
            questions["request_id"].append(request_id)
            questions["prompt"].append(record["question"]["original"])
            for index, (answer, count) in enumerate(record["answers"]["raw"].items()):
                answers["request_id"].append(request_id)
                answers["answer_index"].append(index)
                answers["answer"].append(answer)
                answers["count"].append(int(count))
            for cluster_id, cluster in record["answers"]["clusters"].items():
                for answer in cluster["answers"]:
                    clusters["request_id"].append(request_id)
                    clusters["item_id"].append(cluster_id)
                    clusters["answer"].append(answer)
        except (KeyError, TypeError, ValueError) as exc:
            raise RemarkError(f"{path}: question record lacks ProtoQA fields ({exc})") from exc
    answer_frame = pl.DataFrame(
        answers,
        schema={
            "request_id": pl.String,
            "answer_index": pl.Int64,
            "answer": pl.String,
            "count": pl.Int64,
        },
    )
    requests, responses, mentions = _expand(
        answer_frame, pl.DataFrame(questions), dataset=dataset, source=source, split=split
    )
    catalog = _cluster_catalog(pl.DataFrame(clusters), answer_frame, dataset)
    clustered = answer_frame.join(
        pl.DataFrame(clusters).select("request_id", "answer").unique(),
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


def read_protoqa_train(
    questions_path: Path, answers_path: Path, *, dataset: str, source: str, split: str
) -> ScrapedSource:
    """The simplified train set: ``{qid: question}`` and ``{qid: {answer: count}}``."""
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
        schema={
            "request_id": pl.String,
            "answer_index": pl.Int64,
            "answer": pl.String,
            "count": pl.Int64,
        },
        orient="row",
    )
    questions = pl.DataFrame(
        {"request_id": list(question_map), "prompt": list(question_map.values())}
    ).filter(pl.col("request_id").is_in(list(answer_map)))
    requests, responses, mentions = _expand(
        answer_frame, questions, dataset=dataset, source=source, split=split
    )
    keyed = with_normalized_key(answer_frame, "answer").filter(pl.col("key") != "")
    clusters = keyed.select(
        "request_id", pl.format("{}:{}", "request_id", "key").alias("item_id"), "answer"
    )
    return ScrapedSource(
        requests=requests,
        responses=responses,
        mentions=mentions,
        catalog=_cluster_catalog(clusters, answer_frame, dataset),
        counters={"questions_without_answers": len(question_map) - len(answer_map)},
    )
