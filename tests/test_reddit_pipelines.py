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


def test_every_label_traces_to_the_comment_text_that_produced_it(reddit_project) -> None:
    """Responses keep their comments' ids and offsets; every gazetteer mention's span in its
    comment is its surface, and the `provenance` view shows that text for each label item."""
    import json

    from remark_data.database import query, refresh_database

    run = run_folder(reddit_project, "reddit_movies")
    responses = run.read("scrape", "responses")
    # The dump itself, read independently: each comment id's body, as the response holds it.
    bodies = {}
    path = CORPUS / "reddit/dumps/moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"
    with path.open() as lines:
        for line in lines:
            record = json.loads(line)
            bodies[record["id"]] = record["body"]
    merged = responses.filter(
        (pl.col("comment_ids").list.len() > 1) & pl.col("comment_ids").list.first().is_in(bodies)
    )
    checked = 0
    for text, ids, starts in merged.select("text", "comment_ids", "comment_starts").iter_rows():
        for comment_id, start in zip(ids, starts, strict=True):
            body = bodies[comment_id]
            if "&" not in body:  # entity-free bodies are kept verbatim
                assert text[start : start + len(body)] == body
                checked += 1
    assert checked > 50

    refresh_database(reddit_project)
    traced = query(
        reddit_project,
        "SELECT p.item_id, p.surface, p.text_at_span, p.comment_id, p.context "
        "FROM reddit_movies__labels l, unnest(l.union_item_ids) AS u(item_id) "
        "JOIN provenance p ON p.dataset = l.dataset AND p.request_id = l.request_id "
        "AND p.item_id = u.item_id AND p.role = 'response'",
    )
    labels = run.read("aggregate", "labels")
    assert traced["item_id"].n_unique() == labels["union_item_ids"].explode().n_unique()
    assert (traced["text_at_span"] == traced["surface"]).all()
    assert all(s in c for s, c in traced.select("surface", "context").iter_rows())
    assert set(traced["comment_id"]) <= {c for ids in responses["comment_ids"] for c in ids}
