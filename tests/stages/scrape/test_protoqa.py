"""ProtoQA labels recomputed straight from the JSON files, independently of the pipeline."""

import json

import polars as pl
import pytest

from remark_data.stages.ground.matching import lemma_key, normalize_title
from tests.conftest import CORPUS, run_folder


@pytest.fixture(scope="module")
def labels(built_project):
    frame = run_folder(built_project, "protoqa").read("aggregate", "labels")
    return {row["request_id"]: row for row in frame.iter_rows(named=True)}


def _dev_records(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / "protoqa" / name).read_text().splitlines()]


@pytest.mark.parametrize("file_name", ["dev.crowdsourced.jsonl", "dev.scraped.jsonl"])
def test_every_dev_question_matches_the_json(labels, file_name) -> None:
    records = _dev_records(file_name)
    for record in records:
        qid = record["metadata"]["id"]
        raw = record["answers"]["raw"]
        n_x = sum(raw.values())
        expected = {}
        for cluster_id, cluster in record["answers"]["clusters"].items():
            count = sum(raw.get(a, 0) for a in cluster["answers"])
            if count:
                expected[cluster_id] = count
        label = labels.get(qid)
        if n_x == 0:
            assert label is None
            continue
        assert label["split"] == "dev"
        assert label["n_responders"] == n_x, qid
        assert {i["item_id"]: i["count"] for i in label["items"]} == expected, qid
        for item in label["items"]:
            assert item["p_hat"] == pytest.approx(expected[item["item_id"]] / n_x)
        assert set(label["union_item_ids"]) == set(expected)
        # One responder per raw answer occurrence; unclustered answers keep an empty set.
        assert len(label["responder_item_ids"]) == n_x
        unclustered = sum(
            c
            for a, c in raw.items()
            if not any(a in cl["answers"] for cl in record["answers"]["clusters"].values())
        )
        assert sum(1 for ids in label["responder_item_ids"] if not ids) == unclustered


def test_crowdsourced_uses_raw_counts_where_the_cluster_count_disagrees(labels) -> None:
    # r2q14.4 says count 3 but its answers' raw counts sum to 4: responders are the raw answers.
    record = next(
        r for r in _dev_records("dev.crowdsourced.jsonl") if r["metadata"]["id"] == "r2q14"
    )
    cluster = record["answers"]["clusters"]["r2q14.4"]
    assert cluster["count"] == 3
    item = next(i for i in labels["r2q14"]["items"] if i["item_id"] == "r2q14.4")
    assert item["count"] == sum(record["answers"]["raw"][a] for a in cluster["answers"]) == 4


def test_train_items_partition_each_questions_answer_strings(labels) -> None:
    """pipelines/protoqa.toml groups train answers with the rewards' matcher chain: every answer
    string lands in exactly one item of its question, and an item's count is its strings'."""
    answers = json.loads(
        (CORPUS / "protoqa/train_simplified/simplified_train_answer.json").read_text()
    )
    assert sum(1 for qid in labels if qid.startswith("train_")) == len(answers) == 8782
    for qid in list(answers)[::97]:
        label = labels[qid]
        assert label["split"] == "train"
        assert label["n_responders"] == sum(answers[qid].values())
        strings = [a for i in label["items"] for a in {i["title"], *i["aliases"]}]
        assert len(strings) == len(set(strings))
        kept = {a for a, k in answers[qid].items() if k and normalize_title(a)}
        assert set(strings) == kept
        for item in label["items"]:
            assert item["count"] == sum(answers[qid][a] for a in {item["title"], *item["aliases"]})


def test_train_grouping_folds_synonyms_and_typos_but_not_neighbours(labels) -> None:
    groups = [
        {i["title"], *i["aliases"]}
        for qid, row in labels.items()
        if qid.startswith("train_")
        for i in row["items"]
    ]
    together = [{"babies", "baby"}, {"cars", "automobiles"}, {"fire truck", "firetruck"}]
    for pair in together:
        assert any(pair <= g for g in groups), pair
    apart = [
        {"baseball", "basketball"},
        {"mother", "father"},
        {"bear", "beard"},
        {"8:00 am", "9:00 am"},
    ]
    for pair in apart:
        assert not any(pair <= g for g in groups), pair
        assert sum(bool(pair & g) for g in groups) >= 2  # the corpus has both, in one question


def test_request_ids_are_protoqa_ids(labels) -> None:
    assert "r1q1" in labels and "dev-scraped_q3" in labels and "train_q0" in labels
    assert labels["r1q1"]["prompt"].startswith("Name something that is hard to guess")


def test_grouping_counts_the_strings_each_step_folded(tmp_path) -> None:
    from remark_data.stages.scrape.protoqa import read_protoqa_train

    questions = CORPUS / "protoqa/train_simplified/simplified_train_question.json"
    answers = CORPUS / "protoqa/train_simplified/simplified_train_answer.json"
    chains = {
        "normalized": ["normalized"],
        "lemma": ["normalized", "lemma"],
        "chain": ["normalized", "lemma", "wordnet", "fuzzy"],
    }
    by = {
        name: read_protoqa_train(
            questions, answers, dataset="d", source="t", split="train", group_by=steps
        )
        for name, steps in chains.items()
    }
    assert by["normalized"].counters["strings_merged"] == 0
    for name in ("lemma", "chain"):
        counters = by[name].counters
        folded = by["normalized"].catalog.height - by[name].catalog.height
        assert counters["strings_merged"] == folded > 0
        steps = [k for k in counters if k.startswith("strings_merged.")]
        assert sum(counters[k] for k in steps) == folded
    assert by["chain"].counters["strings_merged.wordnet"] > 0
    # The lemma key alone folds inflections and pronouns only.
    grouped = by["lemma"].catalog.filter(pl.col("aliases").list.len() > 1)
    names = [set(a) for a in grouped["aliases"].to_list()]
    assert {"babies", "baby"} in names and {"feet", "foot"} in names
    assert all(len({lemma_key(a) for a in group}) == 1 for group in names)
