import pytest

from remark_data.extract import Gazetteer

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
