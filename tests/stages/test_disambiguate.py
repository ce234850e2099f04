"""Same-title items told apart on the real Reddit runs: each rule's choice checked against the
catalog years, the thread and the dataset counts, computed here independently."""

import polars as pl

from remark_data.schemas import MATCHED_STATUSES
from remark_data.stages.ground.stage import resolve_same_titles
from tests.conftest import run_folder


def _run(reddit_project, name: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    run = run_folder(reddit_project, name)
    return (
        run.read("ground", "groundings"),
        run.read("scrape", "responses"),
        run.read("ground", "catalog"),
    )


def test_each_rule_chooses_what_its_evidence_says(reddit_project) -> None:
    groundings, responses, catalog = _run(reddit_project, "reddit_movies")
    decided = groundings.filter(pl.col("status") == "disambiguated")
    assert set(decided["resolution"]) == {"release_date", "thread", "prior"}
    assert all(i in c for i, c in decided.select("item_id", "candidates").iter_rows())
    years = dict(catalog.select("item_id", "year").iter_rows())
    written = {
        r: y
        for r, y in responses.select(
            "response_id", pl.from_epoch("created_utc", time_unit="s").dt.year()
        ).iter_rows()
    }
    matched = groundings.filter(pl.col("status").is_in(MATCHED_STATUSES[:-1]))
    in_thread = set(matched.select("request_id", "item_id").iter_rows())
    counts = dict(matched.group_by("item_id").len().iter_rows())
    for row in decided.iter_rows(named=True):
        others = [c for c in row["candidates"] if c != row["item_id"]]
        if row["resolution"] == "release_date":
            year = written[row["response_id"]]
            assert years[row["item_id"]] <= year
            assert all(years[c] > year for c in others), row
        elif row["resolution"] == "thread":
            assert (row["request_id"], row["item_id"]) in in_thread
        else:
            best = counts.get(row["item_id"], 0)
            assert best >= 2 and all(best >= 2 * counts.get(c, 0) for c in others), row


def test_a_film_released_after_the_comment_is_never_chosen(reddit_project) -> None:
    """'Candyman' in a September 2020 comment: the 2021 remake cannot be meant."""
    groundings, _, catalog = _run(reddit_project, "reddit_movies")
    candyman = catalog.filter(pl.col("title") == "Candyman").sort("year")
    assert candyman["year"].to_list()[:1] == [1992] and candyman["year"].max() >= 2021
    picked = groundings.filter(
        pl.col("candidates").list.set_intersection(candyman["item_id"].implode()).list.len() > 0
    )
    assert picked.height > 0
    assert set(picked["item_id"].drop_nulls()) <= set(
        candyman.filter(pl.col("year") < 2021)["item_id"]
    )


def test_off_leaves_every_same_title_mention_ambiguous(reddit_project) -> None:
    groundings, responses, catalog = _run(reddit_project, "reddit_movies")
    undone = groundings.with_columns(
        pl.when(pl.col("status") == "disambiguated")
        .then(pl.lit("ambiguous"))
        .otherwise("status")
        .alias("status"),
        pl.when(pl.col("status") == "disambiguated")
        .then(None)
        .otherwise("item_id")
        .alias("item_id"),
        pl.lit(None, dtype=pl.String).alias("resolution"),
    )
    again = resolve_same_titles(undone, responses, catalog, min_prior=2, prior_ratio=2.0)
    assert (
        again.select("mention_id", "item_id", "status")
        .sort("mention_id")
        .equals(groundings.select("mention_id", "item_id", "status").sort("mention_id"))
    )
