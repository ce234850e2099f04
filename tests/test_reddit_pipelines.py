"""The Reddit pipelines end to end on the real corpus: labels, seen items, open song items,
grounding quality floors against the corpus gold."""

import polars as pl

from remark_data.evaluate.corpus_checks import books_quality, movies_quality
from tests.conftest import CORPUS, run_folder


def test_movies_labels_from_threads(reddit_project) -> None:
    labels = run_folder(reddit_project, "reddit_movies").read("aggregate", "labels")
    responses = run_folder(reddit_project, "reddit_movies").read("scrape", "responses")
    assert set(labels["source"]) == {"moviesuggestions-2020-09", "askreddit-magical"}
    n_x = dict(responses.group_by("request_id").len().iter_rows())
    assert all(
        row["n_responders"] == n_x[row["request_id"]] for row in labels.iter_rows(named=True)
    )
    ask = labels.filter(pl.col("request_id") == "mx0pwd").row(0, named=True)
    assert (
        ask["n_responders"] == 24866
    )  # top-level comments: distinct authors + null-author comments
    assert len(ask["union_item_ids"]) > 1000
    # Every union id is a merged-catalog item, and p̂ = c / n_x.
    catalog_ids = set(
        run_folder(reddit_project, "reddit_movies").read("ground", "catalog")["item_id"]
    )
    for row in labels.head(50).iter_rows(named=True):
        assert set(row["union_item_ids"]) <= catalog_ids
        for item in row["items"]:
            assert item["p_hat"] == item["count"] / row["n_responders"]
    # Titles named in the request become seen items.
    assert labels.filter(pl.col("seen_item_ids").list.len() > 0).height > 50


def test_unmatched_and_ambiguous_mentions_are_kept_with_a_reason(reddit_project) -> None:
    mentions = run_folder(reddit_project, "reddit_movies").read("extract", "mentions")
    groundings = run_folder(reddit_project, "reddit_movies").read("ground", "groundings")
    assert groundings.height == mentions.height
    kept = groundings.filter(pl.col("status").is_in(["ambiguous", "unmatched"]))
    assert kept.height > 0 and kept["reason"].null_count() == 0


def test_music_artists_albums_and_open_songs(reddit_project) -> None:
    run = run_folder(reddit_project, "reddit_music")
    groundings = run.read("ground", "groundings").join(
        run.read("scrape", "mentions").select("mention_id", "kind"), on="mention_id"
    )
    matched = groundings.filter(pl.col("item_id").is_not_null())
    # Each kind grounds only to its own catalog (mentions of unknown kind may match any).
    prefixes = (
        matched.filter(pl.col("kind").is_not_null())
        .group_by("kind")
        .agg(pl.col("item_id").str.extract(r"^(\w+):").unique().sort())
    )
    assert dict(prefixes.iter_rows()) == {
        "artist": ["lastfm"],
        "album": ["rs500"],
        "song": ["song"],
    }
    songs = run.read("ground", "catalog").filter(pl.col("kind") == "song")
    assert songs.height > 10_000 and songs["item_id"].str.contains(" — ").any()
    labels = run.read("aggregate", "labels")
    assert labels.height == 478  # 477 MusiCRS threads + the r/ifyoulikeblank thread


def test_grounding_quality_floors(reddit_project) -> None:
    """Measured figures are in BENCHMARKS.md; these floors catch regressions."""
    books = books_quality(reddit_project.runs_dir, corpus=CORPUS)
    assert books["gold_pairs"] == 302
    assert books["recall"] >= 0.80 and books["precision"] >= 0.60
    movies = movies_quality(reddit_project.runs_dir, corpus=CORPUS)
    assert movies["requests_compared"] >= 250
    assert movies["agreement_over_ours"] >= 0.70
