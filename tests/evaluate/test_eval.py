"""`remark eval`: gold parsing, P/R with bootstrap intervals, and a real run scored."""

import json

import polars as pl
import pytest

from remark_data.errors import RemarkError
from remark_data.evaluate.gold import gold_frame, merged_into, read_gold
from remark_data.evaluate.grounding import read_grounding_gold
from remark_data.evaluate.run import evaluate_run
from remark_data.evaluate.scoring import score
from tests.conftest import REPO


def test_score_counts_pairs_and_brackets_the_estimate() -> None:
    ours = pl.DataFrame({"request_id": ["a", "a", "a", "b"], "key": ["x", "y", "z", "x"]})
    gold = pl.DataFrame({"request_id": ["a", "a", "b", "b"], "key": ["x", "y", "x", "w"]})
    row = score(ours, gold, level="label", by=["request_id"], draws=500)
    # a: tp 2 (x, y), fp 1 (z); b: tp 1 (x), fn 1 (w) — counted by hand.
    assert (row["tp"], row["fp"], row["fn"]) == (3, 1, 1)
    assert row["precision"] == 3 / 4 and row["recall"] == 3 / 4
    assert row["precision_low"] <= row["precision"] <= row["precision_high"]


def test_bad_gold_lines_name_file_and_line(tmp_path) -> None:
    path = tmp_path / "gold.jsonl"
    good = {"dataset": "d", "request_id": "r", "comment_id": "c", "titles": []}
    bad = {**good, "titles": [{"surface": "X", "title": "X", "stance": "loved"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RemarkError, match=r"gold.jsonl:2: titles.0.stance"):
        read_gold(path)


def test_dev_gold_files_parse_and_count_as_documented() -> None:
    movies = read_gold(REPO / "tests/data/movies_dev_gold.jsonl")
    books = read_gold(REPO / "tests/data/books_dev_gold.jsonl")
    assert (len(movies), sum(len(c.titles) for c in movies)) == (299, 630)
    assert (len(books), sum(len(c.titles) for c in books)) == (179, 263)
    recommended = sum(t.stance == "recommended" for c in movies for t in c.titles)
    # one row per distinct (comment, key): a title named twice in a comment counts once
    assert gold_frame(movies).height <= recommended == 601


def test_movies_union_labels_meet_the_dev_targets(reddit_project) -> None:
    """Issue targets on the movies dev gold: union-label precision ≥ 0.90, recall ≥ 0.75."""
    report = evaluate_run(
        reddit_project, "reddit_movies", gold=REPO / "tests/data/movies_dev_gold.jsonl", draws=200
    )
    label = report.filter(pl.col("level") == "label").row(0, named=True)
    assert label["threads"] == 25
    assert label["precision"] >= 0.90
    assert label["recall"] >= 0.75  # measured 0.753 (BENCHMARKS.md)


def test_music_grounding_meets_the_precision_target(reddit_project) -> None:
    """Music: no comment text, so grounding is judged per MusiCRS mention (≥ 200 labelled)."""
    gold = REPO / "tests/data/music_grounding_gold.jsonl"
    mentions = read_grounding_gold(gold)
    assert len(mentions) >= 200
    row = evaluate_run(reddit_project, "reddit_music", gold=gold, draws=200).row(0, named=True)
    assert row["level"] == "grounding" and row["mentions"] == len(mentions)
    assert row["precision"] >= 0.95
    left = row["unmatched_not_in_catalog"] + row["unmatched_not_an_entity"]
    assert left + row["unmatched_missed"] + row["tp"] + row["fp"] >= len(mentions)


def test_remark_eval_prints_a_table_or_json(reddit_project) -> None:
    from tests.test_cli import remark

    gold = REPO / "tests/data/books_dev_gold.jsonl"
    table = remark(reddit_project, "eval", "reddit_books", "--gold", str(gold), "--draws", "100")
    assert table.returncode == 0 and "label" in table.stdout and "mention" in table.stdout
    out = remark(reddit_project, "eval", "reddit_books", "--gold", str(gold), "--format", "json",
                 "--draws", "100")  # fmt: skip
    rows = {r["level"]: r for r in json.loads(out.stdout)}
    assert set(rows) == {"label", "comment", "mention"}
    label = rows["label"]
    assert label["tp"] / (label["tp"] + label["fp"]) == pytest.approx(label["precision"])
    wrong = remark(reddit_project, "eval", "reddit_books", "--gold", str(REPO / "README.md"))
    assert wrong.returncode != 0 and len(wrong.stderr.strip().splitlines()) == 1


def test_bad_grounding_gold_lines_name_file_and_line(tmp_path) -> None:
    path = tmp_path / "music.jsonl"
    good = {"dataset": "d", "request_id": "r", "mention_id": "m", "surface": "X", "item_id": "i"}
    both = {**good, "cause": "not_in_catalog"}
    path.write_text(json.dumps(good) + "\n" + json.dumps(both) + "\n")
    with pytest.raises(RemarkError, match=r"music.jsonl:2: give either item_id or cause"):
        read_grounding_gold(path)
    path.write_text(json.dumps({**good, "cause": "typo"}) + "\n")
    with pytest.raises(RemarkError, match=r"music.jsonl:1: cause"):
        read_grounding_gold(path)


def test_a_merged_id_under_two_items_is_an_error() -> None:
    catalog = pl.DataFrame(
        {"item_id": ["imdb:tt1", "imdb:tt2"], "merged_ids": [["mv:a:1962"], ["mv:a:1962", "x"]]}
    )
    with pytest.raises(RemarkError, match=r"under two items: \['mv:a:1962'\]"):
        merged_into(catalog)
