import pytest

from remark_data.rewards import ListItem, parse_line, parse_list


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1. Arrival (2016)", ListItem("Arrival", 2016, None)),
        ("12) Heat", ListItem("Heat", None, None)),
        ("- The Thing (1982) - a classic", ListItem("The Thing", 1982, None)),
        ("* **Dune** [2021]", ListItem("Dune", 2021, None)),
        ('• "Piranesi" by Susanna Clarke', ListItem("Piranesi", None, "Susanna Clarke")),
        ("Stand by Me (1986)", ListItem("Stand by Me", 1986, None)),
        ("#3 Alien (1979)", ListItem("Alien", 1979, None)),
        ("4.", None),
        ("- (2001)", None),
        ("---", None),
    ],
)
def test_parse_line(line, expected) -> None:
    assert parse_line(line) == expected


def test_unparseable_lines_keep_their_rank_and_blank_lines_are_not_ranks() -> None:
    text = "1. Heat (1995)\n\n2. ???\n3. Alien (1979)\n"
    ranks = parse_list(text)
    assert ranks == [ListItem("Heat", 1995, None), None, ListItem("Alien", 1979, None)]
    assert parse_list(text, max_ranks=2) == ranks[:2]


def test_real_rank_grpo_completions_parse_to_twenty_ranks() -> None:
    import json

    from tests.conftest import CORPUS

    rows = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    for row in rows:
        ranks = parse_list(row["completion"][0]["content"])
        assert len(ranks) == 20
        assert sum(r is None for r in ranks) == 0
        assert all(r.year is not None for r in ranks)
