import polars as pl

from remark_data.stages.ground.catalogs import (
    load_goodbooks_catalog,
    load_movie_catalog,
    load_music_catalog,
)
from remark_data.stages.ground.merge import merge_near_duplicates
from tests.conftest import CORPUS

C = CORPUS / "catalogs"
MOVIE_FILES = {
    "movielens_movies": C / "movies/ml-latest-small/movies.csv",
    "movielens_links": C / "movies/ml-latest-small/links.csv",
    "rank_grpo": C / "movies/rank_grpo/gt_catalog.pkl",
    "reddit_movie_v1": C / "movies/reddit_movie_v1/entity2id.json",
}


def test_movie_catalogs_merge_by_imdb_id_then_title_and_year() -> None:
    catalog = load_movie_catalog(MOVIE_FILES, dataset="d")
    assert catalog["item_id"].is_unique().all()
    by_id = {r["item_id"]: r for r in catalog.iter_rows(named=True)}
    # MovieLens "American President, The (1995)" and v1's "The American President (1995)": one item.
    assert by_id["imdb:tt0112346"]["title"] == "The American President"
    # MovieLens alternative titles become aliases.
    assert "La Cité des enfants perdus" in by_id["imdb:tt0112682"]["aliases"]
    # Rank-GRPO's (title, year) without IMDb id joins the IMDb group of the same title and year.
    assert not catalog.filter(pl.col("item_id") == "mv:dave-made-a-maze:2017").height
    imdb_ids = set(
        pl.read_csv(MOVIE_FILES["movielens_links"], schema_overrides={"imdbId": pl.String})[
            "imdbId"
        ]
    )
    assert catalog.filter(pl.col("item_id").str.starts_with("imdb:")).height >= len(imdb_ids)
    assert (
        load_movie_catalog(MOVIE_FILES, dataset="d")["item_id"].to_list()
        == catalog["item_id"].to_list()
    )


def test_listed_by_names_the_source_catalogs_that_list_a_film() -> None:
    """Computed here from the three files: IMDb ids of MovieLens links and Reddit-Movie v1,
    and Rank-GRPO's (title, year) pairs. Near-duplicates folded across years keep the sources
    of both rows; a Rank-GRPO row that joined one of two same-title films lists neither."""
    import json
    import pickle

    catalog = load_movie_catalog(MOVIE_FILES, dataset="d")
    listed = dict(catalog.select("item_id", "listed_by").iter_rows())
    links = pl.read_csv(MOVIE_FILES["movielens_links"], schema_overrides={"imdbId": pl.String})
    in_movielens = {f"imdb:tt{i}" for i in links["imdbId"]}
    in_v1 = {f"imdb:{i}" for i in json.loads(MOVIE_FILES["reddit_movie_v1"].read_text()).values()}
    in_rank_grpo = set(pickle.loads(MOVIE_FILES["rank_grpo"].read_bytes()))
    for item_id, title, year in (("imdb:tt0172495", "Gladiator", 2000),
                                 ("imdb:tt0030186", "The Gladiator", 1938),
                                 ("imdb:tt0054215", "Psycho", 1960)):  # fmt: skip
        expected = {"movielens"} if item_id in in_movielens else set()
        expected |= {"reddit_movie_v1"} if item_id in in_v1 else set()
        expected |= {"rank_grpo"} if (title, year) in in_rank_grpo else set()
        assert set(listed[item_id]) == expected
    assert len(listed["imdb:tt0172495"]) == 3 and listed["imdb:tt0030186"] == ["reddit_movie_v1"]
    # Freaky Friday 1977 (MovieLens) and Rank-GRPO's 1976 row fold into one item listed by both.
    folded = merge_near_duplicates(catalog).filter(pl.col("item_id") == "imdb:tt0076054")
    assert listed["imdb:tt0076054"] == ["movielens"]
    assert folded["listed_by"].to_list() == [["movielens", "rank_grpo"]]
    # Two IMDb "Spotlight"s of 2015: Rank-GRPO's row joined one of them and lists neither.
    assert "rank_grpo" not in listed["imdb:tt7785302"]
    assert {len(sources) for sources in listed.values()} == {1, 2, 3}
    books = load_goodbooks_catalog(C / "books/goodbooks-10k/books.csv", dataset="d")
    assert set(books["listed_by"].list.len()) == {0}


def test_movielens_alternative_titles_and_the_rows_they_absorb() -> None:
    by_id = {
        r["item_id"]: r for r in load_movie_catalog(MOVIE_FILES, dataset="d").iter_rows(named=True)
    }
    # "Léon: The Professional (a.k.a. The Professional) (Léon) (1994)": both are names, and
    # MovieLens' "a.k.a." marker is not part of one.
    assert set(by_id["imdb:tt0110413"]["aliases"]) >= {"The Professional", "Léon"}
    assert by_id["imdb:tt0114746"]["aliases"] == ["12 Monkeys"]
    glued = [r for r in by_id.values() if r["title"] == "Frontière(s)"]  # "(s)" is no alias
    assert len(glued) == 1 and glued[0]["aliases"] == []
    assert not any(a.lower().startswith("a.k.a") for r in by_id.values() for a in r["aliases"])
    # Rank-GRPO's "Sunset Boulevard" (1950) has no IMDb id; MovieLens' alias names one film, so
    # it joins "Sunset Blvd." and its would-be id stays resolvable.
    assert "mv:sunset-boulevard:1950" not in by_id
    assert "mv:sunset-boulevard:1950" in by_id["imdb:tt0043014"]["merged_ids"]
    # A Rank-GRPO row that finds its IMDb film by title keeps its own id there too.
    assert "mv:ivans-childhood:1962" in by_id["imdb:tt0056111"]["merged_ids"]
    kept = {m: i for i, r in by_id.items() for m in r["merged_ids"]}
    assert len(kept) == sum(len(r["merged_ids"]) for r in by_id.values())  # one home each
    assert not set(kept) & set(by_id)


def test_every_gold_catalog_id_is_an_item_or_a_merged_id() -> None:
    """The movies dev gold was labelled against an earlier catalog; each id it names must still
    lead to an item, directly or through `merged_ids` (as `remark eval` follows them)."""
    from remark_data.evaluate.gold import read_gold
    from remark_data.stages.ground.merge import merge_near_duplicates
    from tests.conftest import REPO

    catalog = merge_near_duplicates(load_movie_catalog(MOVIE_FILES, dataset="d"))
    known = set(catalog["item_id"]) | set(catalog["merged_ids"].explode().drop_nulls())
    gold = read_gold(REPO / "tests/data/movies_dev_gold.jsonl")
    ids = {t.item_id for c in gold for t in c.titles if t.in_catalog == "yes" and t.item_id}
    assert len(ids) > 400
    assert ids <= known, sorted(ids - known)


def test_goodbooks_titles_authors_years() -> None:
    books = load_goodbooks_catalog(C / "books/goodbooks-10k/books.csv", dataset="d")
    assert books.height == 10_000
    hp = books.filter(pl.col("item_id") == "gb:3").row(0, named=True)
    assert hp["title"] == "Harry Potter and the Sorcerer's Stone" and hp["year"] == 1997
    assert "Harry Potter and the Philosopher's Stone" in hp["aliases"]
    assert hp["creator"].startswith("J.K. Rowling")


def test_music_catalog_decodes_mac_roman() -> None:
    music = load_music_catalog(
        {
            "artists": C / "music/hetrec2011-lastfm-2k/artists.dat",
            "albums": C / "music/rolling_stone_500/albumlist.csv",
        },
        dataset="d",
    )
    albums = music.filter(pl.col("kind") == "album")
    assert albums.height == 500 and music.filter(pl.col("kind") == "artist").height == 17632
    # Decoded as Mac-Roman: "Honky Château" (byte 0x89), not mojibake.
    assert albums.filter(pl.col("title") == "Honky Château")["creator"].to_list() == ["Elton John"]


def test_near_duplicates_fold_into_one_item_and_stay_visible() -> None:
    from remark_data.stages.ground.matching import normalize_title
    from remark_data.stages.ground.merge import merge_near_duplicates

    for raw in (
        load_movie_catalog(MOVIE_FILES, dataset="d"),
        load_music_catalog(
            {
                "artists": C / "music/hetrec2011-lastfm-2k/artists.dat",
                "albums": C / "music/rolling_stone_500/albumlist.csv",
            },
            dataset="d",
        ),
    ):
        raw = raw.with_columns(pl.lit([], dtype=pl.List(pl.String)).alias("merged_ids"))
        merged = merge_near_duplicates(raw)
        folded = merged.filter(pl.col("merged_ids").list.len() > 0)
        assert folded.height > 20
        # Every id is kept or named as merged, exactly once.
        ids = merged["item_id"].to_list() + merged["merged_ids"].explode().drop_nulls().to_list()
        assert sorted(ids) == sorted(raw["item_id"].to_list())
        rows = {r["item_id"]: r for r in raw.iter_rows(named=True)}
        for item in folded.iter_rows(named=True):
            group = [rows[item["item_id"]], *(rows[i] for i in item["merged_ids"])]
            assert len({normalize_title(r["title"]) for r in group}) == 1
            years = [r["year"] for r in group if r["year"] is not None]
            assert not years or max(years) - min(years) <= 1
            assert sum(r["item_id"].startswith("imdb:") for r in group) <= 1
            # Names of the folded entries stay findable as aliases.
            assert {r["title"] for r in group} <= {item["title"], *item["aliases"]}
    by_title = {r["title"]: r for r in merged.iter_rows(named=True)}
    assert "The Arcade Fire" in by_title["Arcade Fire"]["aliases"]
