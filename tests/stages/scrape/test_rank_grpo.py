"""Reddit-v2 rows grouped back into requests, from every container of the release."""

import json
import pickle
from collections import defaultdict

import polars as pl
import pytest

from remark_data.errors import RemarkError
from remark_data.stages.ground.catalogs import load_rank_grpo_catalog
from remark_data.stages.ground.matching import normalize_title
from remark_data.stages.ground.pickles import load_restricted_pickle
from remark_data.stages.scrape.rank_grpo import load_rows, prompt_request_id, read_rank_grpo_rows
from tests.conftest import CORPUS, run_folder

SAMPLE = CORPUS / "rank_grpo" / "reddit_v2_sft_train_sample100.json"
PICKLE = CORPUS / "catalogs" / "movies" / "rank_grpo" / "gt_catalog.pkl"


def _rows() -> list[dict]:
    return json.loads(SAMPLE.read_text())["samples"]


def test_each_prompt_union_is_the_union_of_its_rows(built_project) -> None:
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    catalog = run_folder(built_project, "reddit_v2").read("ground", "catalog")
    title_of = dict(
        zip(catalog["item_id"], zip(catalog["title"], catalog["year"], strict=True), strict=True)
    )
    by_prompt: dict[str, list[dict]] = defaultdict(list)
    for row in _rows():
        by_prompt[row["prompt"][0]["content"]].append(row)
    assert labels.height == len(by_prompt) == 40
    assert sorted(labels["n_responders"].to_list()) == sorted(len(r) for r in by_prompt.values())
    assert labels["n_responders"].min() == 1 and labels["n_responders"].max() == 19
    for label in labels.iter_rows(named=True):
        rows = by_prompt[label["prompt"]]
        assert label["request_id"] == prompt_request_id(label["prompt"])
        expected = {
            (normalize_title(t), int(y))
            for r in rows
            for t, y in r["groundtruth_with_release_year"]
        }
        got = {(normalize_title(title_of[i][0]), title_of[i][1]) for i in label["union_item_ids"]}
        assert got == expected
        counts = defaultdict(int)
        for r in rows:
            for key in {
                (normalize_title(t), int(y)) for t, y in r["groundtruth_with_release_year"]
            }:
                counts[key] += 1
        for item in label["items"]:
            key = (normalize_title(item["title"]), item["year"])
            assert item["count"] == counts[key]
            assert item["p_hat"] == pytest.approx(counts[key] / len(rows))
        assert [len(ids) for ids in label["responder_item_ids"]] == [
            len({(normalize_title(t), y) for t, y in r["groundtruth_with_release_year"]})
            for r in rows
        ]
        assert all(
            isinstance(pair[1], str) and len(pair[1]) == 4
            for pair in label["groundtruth_with_release_year"]
        )


def _labels_from(path, split="train") -> pl.DataFrame:
    part = read_rank_grpo_rows(path, dataset="reddit_v2", source="s", split=split)
    return part.mentions.sort("mention_id").drop("mention_id")


def test_jsonl_parquet_and_save_to_disk_read_like_json(tmp_path) -> None:
    import datasets

    rows = _rows()
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parquet = tmp_path / "rows.parquet"
    load_rows(SAMPLE, split="train").write_parquet(parquet)
    ds = datasets.Dataset.from_list(
        [
            {
                k: r[k]
                for k in (
                    "sample_id",
                    "prompt",
                    "completion",
                    "seen_titles",
                    "groundtruth_with_release_year",
                )
            }
            for r in rows
        ]
    )
    single = tmp_path / "single"
    ds.save_to_disk(str(single))
    as_dict = tmp_path / "dict"
    datasets.DatasetDict({"train": ds, "validation": ds.select(range(3))}).save_to_disk(
        str(as_dict)
    )
    reference = _labels_from(SAMPLE)
    for path in (jsonl, parquet, single, as_dict):
        assert _labels_from(path).equals(reference), path
    assert read_rank_grpo_rows(as_dict, dataset="d", source="s", split="dev").responses.height == 3
    with pytest.raises(RemarkError, match="no split 'test'"):
        read_rank_grpo_rows(as_dict, dataset="d", source="s", split="test")


def test_identical_duplicate_rows_are_reported_not_merged(tmp_path) -> None:
    rows = _rows()
    duplicated = [*rows, {**rows[0], "sample_id": "copy_of_" + rows[0]["sample_id"]}]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"samples": duplicated}))
    part = read_rank_grpo_rows(path, dataset="d", source="s", split="train")
    assert part.counters["duplicate_rows"] == 1
    assert part.responses.height == 101
    assert (
        read_rank_grpo_rows(SAMPLE, dataset="d", source="s", split="train").counters[
            "duplicate_rows"
        ]
        == 0
    )


def test_missing_columns_are_one_clear_error(tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": [{"role": "user", "content": "x"}]}) + "\n")
    with pytest.raises(
        RemarkError, match=r"lack columns \['seen_titles', 'groundtruth_with_release_year'\]"
    ):
        load_rows(path, split="train")


def test_catalog_keeps_titles_and_int_years() -> None:
    raw = pickle.loads(PICKLE.read_bytes())  # trusted here: the test compares against it
    assert load_restricted_pickle(PICKLE) == raw
    catalog = load_rank_grpo_catalog(PICKLE, dataset="d")
    assert catalog["year"].dtype == pl.Int64
    assert catalog.height + catalog["aliases"].list.len().sum() == len(raw) == 7404
    assert catalog.filter(pl.col("year") == 201)["title"].to_list() == ["The Wall"]
    # Ids are content-derived, hence stable across runs.
    assert (
        catalog["item_id"].to_list()
        == load_rank_grpo_catalog(PICKLE, dataset="d")["item_id"].to_list()
    )


class _Exploit:
    def __reduce__(self):
        import os

        return (os.system, ("touch /tmp/remark-pwned",))


def test_restricted_unpickler_refuses_code(tmp_path) -> None:
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(pickle.dumps([("Heat", 1995), _Exploit()]))
    with pytest.raises(RemarkError, match="refusing pickle: opcode STACK_GLOBAL"):
        load_restricted_pickle(evil)
    dict_pickle = tmp_path / "dict.pkl"
    dict_pickle.write_bytes(pickle.dumps({"Heat": 1995}))
    with pytest.raises(RemarkError, match="opcode EMPTY_DICT"):
        load_rank_grpo_catalog(dict_pickle, dataset="d")
