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
    assert set(decided["resolution"]) == {"release_date", "thread", "prior", "catalogs"}
    assert all(i in c for i, c in decided.select("item_id", "candidates").iter_rows())
    years = dict(catalog.select("item_id", "year").iter_rows())
    listed = dict(catalog.select("item_id", pl.col("listed_by").list.len()).iter_rows())
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
        elif row["resolution"] == "prior":
            best = counts.get(row["item_id"], 0)
            assert best >= 2 and all(best >= 2 * counts.get(c, 0) for c in others), row
        else:  # catalogs: two more source catalogs list it than any other candidate left
            year = written.get(row["response_id"])  # none for the request's own mentions
            possible = [c for c in others if None in (year, years[c]) or years[c] <= year]
            assert all(listed[row["item_id"]] >= listed[c] + 2 for c in possible), row


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
    again = resolve_same_titles(
        undone, responses, catalog, min_prior=2, prior_ratio=2.0, listing_margin=2
    )
    assert (
        again.select("mention_id", "item_id", "status")
        .sort("mention_id")
        .equals(groundings.select("mention_id", "item_id", "status").sort("mention_id"))
    )


def test_the_film_every_source_catalog_lists_is_the_one_meant(reddit_project) -> None:
    """'Gladiator' and 'Psycho' in r/MovieSuggestions: Reddit-Movie v1, Rank-GRPO's Reddit-v2
    and MovieLens all list the 2000 and the 1960 film; the other same-title films only one."""
    groundings, _, catalog = _run(reddit_project, "reddit_movies")
    for title, meant in (("Gladiator", "imdb:tt0172495"), ("Psycho", "imdb:tt0054215")):
        same = catalog.filter(pl.col("title").is_in([title, f"The {title}"]))
        assert len(dict(same.select("item_id", "listed_by").iter_rows())[meant]) == 3
        by_catalogs = groundings.filter(
            (pl.col("resolution") == "catalogs") & pl.col("candidates").list.contains(meant)
        )
        assert by_catalogs.height > 0 and set(by_catalogs["item_id"]) == {meant}


def test_a_one_catalog_lead_decides_nothing(reddit_project) -> None:
    """The two 2017 'Coco's are listed by two catalogs and by one: too close to call."""
    groundings, _, catalog = _run(reddit_project, "reddit_movies")
    cocos = catalog.filter(pl.col("title") == "Coco")["item_id"].to_list()
    coco = groundings.filter(pl.col("candidates").list.set_intersection(cocos).list.len() == 2)
    assert coco.height > 0 and set(coco["status"]) <= {"ambiguous", "disambiguated"}
    assert "catalogs" not in set(coco["resolution"].drop_nulls())
