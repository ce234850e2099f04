"""The matcher chain a spec sets for its rewards, on real ProtoQA answers: every label row
carries it, it grounds more of the released human answers, and Reddit keeps its matcher."""

import json

import polars as pl

from remark_data.rewards import ListScorer
from tests.conftest import CORPUS, run_folder


def test_protoqa_rows_carry_the_chain_and_it_grounds_more_human_answers(built_project) -> None:
    labels = run_folder(built_project, "protoqa").read("aggregate", "labels")
    chain = ("normalized", "lemma", "wordnet", "fuzzy", "semantic")
    assert set(map(tuple, labels["match_steps"].to_list())) == {chain}
    reddit = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    assert set(map(tuple, reddit["match_steps"].to_list())) == {("normalized",)}
    rows = {r["request_id"]: r for r in labels.filter(pl.col("split") == "dev").to_dicts()}
    answers = []
    for line in (CORPUS / "protoqa/dev.predictions.human.jsonl").read_text().splitlines():
        for qid, listed in json.loads(line).items():
            if qid in rows:
                answers.extend((qid, a) for a in listed if a)
    assert len(answers) > 400

    def grounded(steps: list[str]) -> int:
        scorer = ListScorer(max_ranks=None)
        return sum(
            scorer.ground(answer, {**rows[qid], "match_steps": steps})[0] is not None
            for qid, answer in answers
        )

    exact = grounded(["normalized"])
    strings = grounded(["normalized", "lemma", "wordnet", "fuzzy"])
    assert strings > exact * 1.05
    assert grounded(list(chain)) > strings * 1.1
    # No string step pays a longer line for the one-word cluster string it contains (the
    # subset guard); the semantic step is judged by its measured false-match share instead.
    row = {**next(iter(rows.values())), "match_steps": list(chain[:-1])}
    one_word = next(a for i in row["items"] for a in [i["title"], *i["aliases"]] if " " not in a)
    assert ListScorer().ground(one_word, row) != [None]
    assert ListScorer().ground(f"{one_word} shop owner", row) == [None]
