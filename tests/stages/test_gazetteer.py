from pathlib import Path

import polars as pl
import pytest

from remark_data.stages.extract.gazetteer import Gazetteer, gazetteer_mentions
from tests.conftest import CORPUS

CATALOG = [
    ("heat", "Heat"),
    ("it", "It"),
    ("up", "Up"),
    ("her", "Her"),
    ("us", "Us"),
    ("thing", "The Thing"),
    ("arrival", "Arrival"),
    ("lotr", "The Lord of the Rings: The Return of the King"),
    ("lotr1", "The Lord of the Rings"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("it was up to her, honestly", []),  # common words in prose
        ("It was great. Heat is good too", []),  # capitalised only because a sentence starts
        ('Have you seen "Heat"? Or Up (2009)?', ["heat", "up"]),  # quotes, year
        ("Some picks:\nHer\n- Us\n3. It", ["her", "us", "it"]),  # list context
        ("I really liked The Thing and Arrival", ["thing", "arrival"]),  # capitalised mid-sentence
        ("the lord of the rings: the return of the king!", ["lotr"]),  # longest match wins
    ],
)
def test_gazetteer_guards_common_words(text, expected) -> None:
    assert [f.item_id for f in Gazetteer(CATALOG).find(text)] == expected


def test_gazetteer_reports_years_and_surfaces() -> None:
    found = Gazetteer(CATALOG).find("Watch Arrival (2016), then Heat [1995]")
    assert [(f.item_id, f.surface, f.year) for f in found] == [
        ("arrival", "Arrival", 2016),
        ("heat", "Heat", 1995),
    ]


@pytest.mark.parametrize(
    ("text", "year"),
    [
        ("The Thing 1982", 1982),  # bare, at the end of the text
        ("The Thing (1982.) is great", 1982),  # more inside the bracket
        ('"The Thing" (1982, Carpenter)', 1982),  # after the closing quote
        ("The Thing - 1982, then Heat", 1982),
        ("The Thing 2000 times", None),  # more words follow: not a year
        ("The Thing 1980s remake", None),  # a decade
        ("Arrival, 1982, Heat", None),  # after a comma: the next entry
        ("The Thing\n1982", None),  # the next line
        ("The Thing (2019 rewatch)", None),  # a note, not a release year
        ("The Thing (1920 x 1080)", None),
        ("The Thing 2019.05.01", None),  # a date
        ("The Thing\n(2020 edit: also Heat)", None),
    ],
)
def test_gazetteer_reads_a_year_written_loosely(text, year) -> None:
    assert Gazetteer(CATALOG).find(text)[0].year == year


def test_a_bare_year_that_is_a_title_is_the_next_title() -> None:
    found = Gazetteer([*CATALOG, ("1917", "1917")]).find("Watch The Thing 1917.")
    assert (found[0].item_id, found[0].year) == ("thing", None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Some picks:\nHer\nUs\nHeat", ["her", "us", "heat"]),  # a capital on the next line
        ("She loved Her Majesty", []),  # a capital on the same line: part of a longer title
        ('*"Up"* and **"Her"**', ["up", "her"]),  # quotes inside emphasis
        ("a novel written by Heat", []),  # after "by": an author
        ("  12) Her\n1234. Us\n", ["her"]),  # a list marker has at most three digits
    ],
)
def test_gazetteer_reads_evidence_around_a_match(text, expected) -> None:
    assert [f.item_id for f in Gazetteer(CATALOG).find(text)] == expected


def test_gazetteer_reports_creators() -> None:
    found = Gazetteer(CATALOG).find("Heat (1995) by Michael Mann")
    assert [(f.item_id, f.year, f.creator) for f in found] == [("heat", 1995, "Michael Mann")]


class _CountingText(str):
    """A text that tallies the characters copied out of it by slicing."""

    copied: int

    def __getitem__(self, key):  # type: ignore[override]
        piece = super().__getitem__(key)
        self.copied += len(piece)
        return piece


def test_gazetteer_work_is_linear_in_text_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9: each candidate sliced the whole text before it (and searched it), so a 5 MB comment
    never finished. Work per character, counted without a clock, must not grow with the text."""
    checks = 0
    has_evidence = Gazetteer._has_evidence

    def counted(*args):
        nonlocal checks
        checks += 1
        return has_evidence(*args)

    monkeypatch.setattr(Gazetteer, "_has_evidence", staticmethod(counted))
    gazetteer = Gazetteer(CATALOG)
    snippet = (
        'It was up to her. I liked Heat and Arrival!\nPicks:\nHer\n- Us\n3. It\n"Up" (2009)\n\n'
    )
    per_char = {}
    for size in (10_000, 160_000):
        text = _CountingText((snippet * (size // len(snippet) + 1))[:size])
        text.copied = 0
        checks = 0
        found = gazetteer.find(text)
        assert len(found) > size // len(snippet) * 5  # the evidence checks really ran
        per_char[size] = (text.copied / size, checks / size)
    (copied_small, checks_small), (copied_large, checks_large) = per_char.values()
    assert checks_large <= 1.1 * checks_small
    assert copied_large <= 1.5 * copied_small  # the quadratic version: ~16x


# Real r/MovieSuggestions comments (read from the corpus by id, not copied here) that showed
# each extraction rule (issue: label fidelity): titles that must be found, words that must not.
COMMENTS = CORPUS / "reddit/dumps/moviesuggestions_2020-09/ndjson/MovieSuggestions_comments.ndjson"


@pytest.fixture(scope="module")
def movie_gazetteer():
    import tempfile

    from remark_data.config import load_pipeline_spec
    from remark_data.sources import Fetcher
    from remark_data.stages.ground.catalogs import load_catalog
    from tests.conftest import make_project

    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "p")
        spec = load_pipeline_spec(project.pipeline_path("reddit_movies"))
        files = Fetcher(project).resolve(files=spec.catalog.files, paths=spec.catalog.paths)
        catalog = load_catalog(spec.catalog, files, dataset="reddit_movies")
    names = catalog.filter(pl.col("kind") == "movie").select(
        "item_id", pl.concat_list("title", "aliases").alias("name")
    )
    return Gazetteer(names.explode("name").drop_nulls().iter_rows())


@pytest.fixture(scope="module")
def comment_texts():
    import json

    with COMMENTS.open() as handle:
        return {row["id"]: row["body"] for row in map(json.loads, handle)}


@pytest.mark.parametrize(
    ("comment_id", "found", "not_found"),
    [
        # markdown links: the visible text is the title
        ("g563bwg", {"Paprika", "Memories of Murder", "Cure", "Rashomon", "Akira"}, set()),
        # a year glued to the title; "I am" is prose
        ("g53k8od", {"Rope", "Harvey"}, {"I am"}),
        # a comma list vouches for its one-word titles, glued or not
        ("g5a9gm1", {"Psycho", "Casablanca", "Rebecca"}, set()),
        ("g56mj7b", {"Brick", "Blood Simple"}, set()),
        # part of a longer capitalised name, a credit in parentheses
        ("g54raz1", set(), {"Cameron"}),
        ("g5bub9r", set(), {"Queen", "Mars", "Gambler"}),
        ("g5a4fu2", {"Psycho"}, {"Hitchcock"}),
        ("g54rdg1", set(), {"Directors Cut"}),
        # everyday phrases that happen to be titles
        ("g58n8y3", set(), {"a true story"}),
        ("g57otog", set(), {"normal people"}),
        # "L.A." written "LA"; "and" separates two titles; a possessive credits a title
        ("g54vc0t", {"LA confidential"}, set()),
        ("g60ggij", {"Predestination", "Blade Runner 2049"}, set()),
        ("g5a1erh", {"Rebecca"}, set()),
    ],
)
def test_gazetteer_on_real_comments(
    movie_gazetteer, comment_texts, comment_id, found, not_found
) -> None:
    surfaces = {f.surface for f in movie_gazetteer.find(comment_texts[comment_id])}
    assert found <= surfaces, found - surfaces
    assert not (not_found & surfaces), not_found & surfaces


def test_mask_markup_keeps_offsets() -> None:
    from remark_data.stages.extract.markup import mask_markup

    text = "See [The Handmaiden](https://letterboxd.com/film/the-handmaiden/) &amp; more"
    masked = mask_markup(text)
    assert len(masked) == len(text)
    start = masked.index("The Handmaiden")
    assert text[start : start + len("The Handmaiden")] == "The Handmaiden"
    assert "https" not in masked and "&amp;" not in masked


def test_stance_on_real_comments(movie_gazetteer, comment_texts) -> None:
    """A reply that quotes the request's titles ("> Inception") and answers each with its own:
    the quoted ones are referenced, the answers recommended."""
    stances = {f.surface: f.stance for f in movie_gazetteer.find(comment_texts["g563bwg"])}
    assert stances["Inception"] == stances["Twelve Monkeys"] == "referenced"
    assert stances["Paprika"] == stances["Memories of Murder"] == "recommended"


@pytest.mark.parametrize(
    ("text", "title", "stance"),
    [
        ("If you liked Arrival, try Coherence.", "Arrival", "referenced"),
        ("If you liked Arrival, try Coherence.", "Coherence", "recommended"),
        ("Something similar to Heat would be Thief.", "Heat", "referenced"),
        ("Avoid Lucy at all costs.", "Lucy", "negative"),
        ("Lucy was terrible.", "Lucy", "negative"),
        ("The director of Arrival made Enemy too.", "Arrival", "referenced"),
    ],
)
def test_read_stance(text, title, stance) -> None:
    from remark_data.stages.extract.stance import read_stance

    start = text.index(title)
    assert read_stance(text, start, start + len(title)) == stance


@pytest.mark.parametrize(
    ("comment_id", "surface", "title"),
    [
        ("g5a01ku", "American Paycho", "american psycho"),
        ("g5a2ccf", "Napolean Dynamite", "napoleon dynamite"),
        ("g550zku", "The Man Who Shot Liberty Vallance", "man who shot liberty valance"),
        ("g59xfm7", "Forest Gump", "forrest gump"),
    ],
)
def test_misspelled_titles_on_title_lines_of_real_comments(
    movie_gazetteer, comment_texts, comment_id, surface, title
) -> None:
    from remark_data.stages.extract.misspelled import misspelled_mentions

    text = comment_texts[comment_id]
    row = {"dataset": "d", "request_id": "r", "response_id": "r/a", "responder_index": 0,
           "comment_id": comment_id, "text": text}  # fmt: skip
    texts = pl.DataFrame([row])
    found = gazetteer_mentions(texts, movie_gazetteer, role="response", kind="movie")
    extra = misspelled_mentions(
        texts, found, movie_gazetteer.keys, prefixes=movie_gazetteer.prefixes, cutoff=92,
        kind="movie",
    )  # fmt: skip
    assert surface in extra["surface"].to_list()
    hit = extra.filter(pl.col("surface") == surface).row(0, named=True)
    assert text[hit["span_start"] : hit["span_end"]] == surface
    assert surface not in found["surface"].to_list()  # the gazetteer alone missed it
    # Grounding finds the catalog name the step matched (same cutoff).
    assert title in movie_gazetteer.keys


def test_misspelling_guards_numbers_and_cut_short_names(movie_gazetteer) -> None:
    from remark_data.stages.extract.misspelled import closest_names

    names = [k for k in movie_gazetteer.keys if " " in k]
    prefixes = movie_gazetteer.prefixes
    queries = ["interstate 66", "pirates of the caribbean", "the amazing spiderman 1",
               "shawn of the dead", "dr strangelove"]  # fmt: skip
    matched = closest_names(queries, names, cutoff=92, prefixes=prefixes)
    assert (
        "interstate 66" not in matched
        and "the amazing spiderman 1" not in matched
        and "pirates of the caribbean" not in matched
    )
    assert matched.get("shawn of the dead") == "shaun of the dead"
    # "Dr. Strangelove or: How I Learned ..." is too long for the gazetteer, but it is no
    # misspelling of "Dr. Strange Glove".
    assert "dr strangelove" not in matched
