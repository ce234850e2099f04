"""The matcher chain's later steps on real data: WordNet 3.0 and all-MiniLM-L6-v2 as installed by
`make models`, and real ProtoQA dev clusters."""

import json
import subprocess
import sys

import pytest

from remark_data.errors import RemarkError
from remark_data.stages.ground.matching import MATCH_STEPS, TitleMatcher, lemma_key
from remark_data.stages.ground.wordnet import WordNet, partitions
from tests.conftest import CORPUS, REPO

CHAIN = ("normalized", "lemma", "wordnet", "fuzzy")


def _question(qid: str) -> list[tuple[str, str, int | None]]:
    """A crowdsourced dev question's clusters as (cluster id, answer string, None) names."""
    for line in (CORPUS / "protoqa/dev.crowdsourced.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["metadata"]["id"] == qid:
            clusters = record["answers"]["clusters"]
            return [(cid, a, None) for cid, c in clusters.items() for a in c["answers"]]
    raise AssertionError(qid)


def test_wordnet_pairs_synonyms_by_their_most_frequent_sense() -> None:
    wordnet = WordNet.load()
    assert wordnet.score("automobile", "car") == 1.0
    assert wordnet.score("mice", "mouse") == 1.0  # an exception form
    assert wordnet.score("sofas", "couch") == 1.0  # a detachment rule
    assert wordnet.score("car", "car shop") == 0.5  # one of two parts
    # "to mother" and "to father" share a rarer verb sense only.
    assert wordnet.score("mother", "father") == 0.0
    assert wordnet.score("bread", "cabbage") == 0.0  # both slang for money, not first senses
    # normalize_title keeps "_", so a phrase may arrive half-joined; it is still looked up.
    assert wordnet.score("a_la carte", "a la carte") == 1.0


def test_wordnet_index_stays_out_of_the_garbage_collectors_walk() -> None:
    """~150k lemmas as GC-tracked containers would make every full collection of a training
    process walk them (41 ms each, measured); as tuples of ints they are untracked."""
    script = (
        "import gc; before = len(gc.get_objects());"
        "from remark_data.stages.ground.wordnet import WordNet; WordNet.load(); gc.collect();"
        "print(len(gc.get_objects()) - before)"
    )
    added = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    assert int(added) < 20_000


def test_partitions_are_every_contiguous_split() -> None:
    found = partitions(("a", "b", "c", "d"))
    assert len(found) == 2**3 == len(set(found))
    assert all(" ".join(parts) == "a b c d" for parts in found)


def test_each_step_matches_only_what_the_ones_before_left() -> None:
    names = [("car", "car", None), ("hose", "hose", None), ("stylist", "hair stylist", None)]
    matcher = TitleMatcher(names, steps=CHAIN)
    lines = ["Car", "the cars", "automobile", "car shop", "hairstylist", "hoses", "hoe"]
    assert [matcher.match(line) for line in lines] == [
        "car", "car", "car", None, "stylist", "hose", None
    ]  # fmt: skip
    assert matcher.matched_by == {"normalized": 1, "lemma": 2, "wordnet": 1, "fuzzy": 1}


@pytest.mark.parametrize(
    ("line", "answer", "typo"),
    [
        ("west virgina", "west virginia", True),
        ("travelling", "traveling", True),
        ("fire truck", "firetruck", True),
        ("bear", "beard", False),  # short words: another word, not a typo
        ("basketball", "baseball", False),  # two edits
        ("height", "weight", False),  # the first letter changed
        ("8:00 am", "9:00 am", False),
    ],
)
def test_fuzzy_step_takes_typos_not_neighbouring_answers(line, answer, typo) -> None:
    matcher = TitleMatcher([("a", answer, None)], steps=("normalized", "fuzzy"))
    assert (matcher.match(line) == "a") is typo


def test_wordnet_step_on_a_real_question() -> None:
    """r1q19 (who would you donate to): "kids with cancer" and "children with cancer" are in
    different clusters, so the chain keeps each string's own cluster (normalised key first)."""
    names = _question("r1q19")
    matcher = TitleMatcher(names, steps=CHAIN)
    for cluster_id, answer, _ in names:
        assert matcher.match(answer) == cluster_id


def test_wordnet_step_equals_scoring_every_answer_string() -> None:
    """The step only scores strings sharing a sense with the line whose words all pair; on
    real human answers that gives what ProtoQA's rule over every string of every cluster gives."""
    wordnet = WordNet.load()
    human = [json.loads(line) for line in (CORPUS / "protoqa/dev.predictions.human.jsonl")
             .read_text().splitlines()]  # fmt: skip
    answers: dict[str, list[str]] = {}
    for record in human:
        for qid, listed in record.items():
            answers.setdefault(qid, []).extend(a for a in listed if a)
    compared = matched = 0
    for qid in sorted(answers)[:24]:
        names = _question(qid)
        matcher = TitleMatcher(names, steps=CHAIN)
        keys = {(cid, lemma_key(a)) for cid, a, _ in names if lemma_key(a)}
        for line in dict.fromkeys(answers[qid]):
            if not (key := lemma_key(line)):
                continue
            scores = {(cid, name): wordnet.score(key, name) for cid, name in keys}
            best = max(scores.values())
            expected = {cid for (cid, _), s in scores.items() if s == best} if best >= 1 else None
            assert matcher._wordnet(line, key) == expected, (qid, line)
            compared += 1
            matched += expected is not None
    assert compared > 400 and matched > 150


def test_semantic_step_reaches_paraphrases_and_leaves_novel_answers() -> None:
    names = [("age", "age", None), ("age", "how old", None), ("job", "occupation", None)]
    matcher = TitleMatcher(names, steps=MATCH_STEPS)
    matcher.prefetch(["how old they are", "years old", "favourite colour"])
    assert matcher.match("how old they are") == "age"
    assert matcher.match("years old") == "age"
    assert matcher.match("favourite colour") is None
    assert matcher.matched_by["semantic"] == 2


def _question_text(qid: str) -> str:
    for line in (CORPUS / "protoqa/dev.crowdsourced.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["metadata"]["id"] == qid:
            return record["question"]["original"]
    raise AssertionError(qid)


def test_semantic_step_takes_a_closer_call_when_a_word_of_its_own_agrees() -> None:
    """Real dev question r2q25 (why prefer a cat over a dog): "cats are calmer" is most similar
    to the calm cluster but not 0.1 ahead of the next; "calm" is a word of that cluster alone,
    so the supported rule takes it. The same word in the request is no evidence."""
    names, question = _question("r2q25"), _question_text("r2q25")
    plain = TitleMatcher(names, steps=MATCH_STEPS, semantic_supported_similarity=2.0)
    assert plain.match("cats are calmer") is None
    supported = TitleMatcher(names, steps=MATCH_STEPS, context=question)
    assert supported.match("cats are calmer") == "r2q25.0"
    assert supported.matched_by["semantic"] == 1
    in_request = TitleMatcher(names, steps=MATCH_STEPS, context=question + " Are they calmer?")
    assert in_request.match("cats are calmer") is None


def test_a_word_of_the_question_does_not_support_a_match() -> None:
    """Real dev question r2q9 (complaints about a gym instructor): the answer "instructors",
    judged invalid, shares only the question's own word with "instructors touch too much"."""
    names = _question("r2q9")
    assert TitleMatcher(names, steps=MATCH_STEPS).match("instructors") is not None
    with_request = TitleMatcher(names, steps=MATCH_STEPS, context=_question_text("r2q9"))
    assert with_request.match("instructors") is None


def test_missing_model_data_is_one_clear_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("REMARK_MODELS_DIR", str(tmp_path))
    with pytest.raises(RemarkError, match="make models"):
        WordNet(tmp_path / "wordnet")


def test_install_script_is_idempotent_and_verifies(tmp_path) -> None:
    """A second run keeps the verified install (no download); a tampered marker is not trusted
    for content: the script checks the archives' sha256 before it writes the marker."""
    target = REPO / "data" / "cache" / "models"
    result = subprocess.run(
        ["scripts/install_models.sh", ".venv", str(target)],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "wordnet ok" in result.stdout and "minilm ok" in result.stdout
    assert (target / "wordnet" / ".verified").read_text().strip() == (
        "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"
    )
