"""The semantic step's cut-offs on the human-judged ProtoQA answers
(tests/data/protoqa_answer_gold.jsonl): with and without the question before each text, and the
matcher's own rule with and without lexical support.

    python benchmarks/eval_semantic_context.py   # needs `make models`

Each gold answer goes first through the string steps (normalized, lemma, wordnet, fuzzy) against
its question's clusters; what they leave is matched by sentence embedding to the cluster of the
most similar string, given a cut-off (similarity) and a margin over every other cluster. Right:
the gold cluster, or nothing for an answer no cluster holds; false: any other match. Rows are
printed for margins 0.05 and 0.1. Then `TitleMatcher`'s semantic step itself (context: the
question) over a grid of the lexically supported cut-off and margin, the plain rule fixed at
0.65 / 0.1; "off" turns the supported rule off. The last line is one JSON object with the best
accuracy at ≤ 2% false matches per variant and the grid.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remark_data.evaluate.answers import GoldAnswer, read_answer_gold
from remark_data.stages.ground.matching import TitleMatcher
from remark_data.stages.ground.semantic import Embedder

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared/corpus/protoqa/dev.crowdsourced.jsonl"
STRING_STEPS = ("normalized", "lemma", "wordnet", "fuzzy")
CUTOFFS = [round(0.5 + 0.025 * i, 3) for i in range(17)]


def main() -> None:
    questions: dict[str, tuple[str, dict[str, list[str]]]] = {}
    for line in DEV.read_text().splitlines():
        record = json.loads(line)
        clusters = {cid: c["answers"] for cid, c in record["answers"]["clusters"].items()}
        questions[record["metadata"]["id"]] = (record["question"]["original"], clusters)
    gold = [
        g
        for g in read_answer_gold(REPO / "tests/data/protoqa_answer_gold.jsonl")
        if g.question_id in questions
    ]
    matchers = {
        qid: TitleMatcher(
            [(cid, s, None) for cid, strings in clusters.items() for s in strings],
            steps=STRING_STEPS,
        )
        for qid, (_, clusters) in questions.items()
    }
    right = false = 0
    left: list[GoldAnswer] = []
    for answer in gold:
        found = matchers[answer.question_id].match(answer.answer)
        if found is None:
            left.append(answer)
        else:
            right += found == answer.cluster
            false += found != answer.cluster
    embedder = Embedder.load()
    best: dict[str, dict[str, float]] = {}
    for variant in ("answer only", "after the question"):
        prefix = variant == "after the question"
        picks = []
        for answer in left:
            question, clusters = questions[answer.question_id]
            lead = question + " " if prefix else ""
            names = [(cid, s) for cid, strings in clusters.items() for s in strings]
            vector = embedder.embed([lead + answer.answer])[0]
            similarity = embedder.embed([lead + s for _, s in names]) @ vector
            by_cluster: dict[str, float] = {}
            for (cid, _), value in zip(names, similarity.tolist(), strict=True):
                by_cluster[cid] = max(value, by_cluster.get(cid, -1.0))
            ranked = sorted(by_cluster.items(), key=lambda pair: -pair[1])
            runner_up = ranked[1][1] if len(ranked) > 1 else -1.0
            picks.append((ranked[0][0], ranked[0][1], runner_up))
        for margin in (0.05, 0.1):
            for cutoff in CUTOFFS:
                ok, bad = right, false
                for answer, (cid, top, second) in zip(left, picks, strict=True):
                    chosen = cid if top >= cutoff and top - second >= margin else None
                    ok += chosen == answer.cluster
                    bad += chosen is not None and chosen != answer.cluster
                accuracy, false_share = ok / len(gold), bad / len(gold)
                print(f"{variant:18} margin {margin:.2f} cut-off {cutoff:.3f}: "
                      f"accuracy {accuracy:.3f}, false matches {false_share:.3f}")  # fmt: skip
                key = f"{variant}, margin {margin}"
                if false_share <= 0.02 and accuracy > best.get(key, {}).get("accuracy", 0.0):
                    best[key] = {"cutoff": cutoff, "accuracy": round(accuracy, 4),
                                 "false_match_share": round(false_share, 4)}  # fmt: skip
    grid: dict[str, dict[str, float]] = {}
    for supported_similarity in (None, 0.5, 0.55, 0.6):
        for supported_margin in (0.0, 0.05) if supported_similarity else (1.0,):
            ok = bad = 0
            for qid, (question, clusters) in questions.items():
                matcher = TitleMatcher(
                    [(cid, s, None) for cid, strings in clusters.items() for s in strings],
                    steps=(*STRING_STEPS, "semantic"),
                    semantic_supported_similarity=supported_similarity or 2.0,
                    semantic_supported_margin=supported_margin,
                    context=question,
                )
                for answer in (g for g in gold if g.question_id == qid):
                    found = matcher.match(answer.answer)
                    ok += found == answer.cluster
                    bad += found is not None and found != answer.cluster
            key = f"supported {supported_similarity or 'off'} / {supported_margin}"
            grid[key] = {"accuracy": round(ok / len(gold), 4),
                         "false_match_share": round(bad / len(gold), 4)}  # fmt: skip
            print(f"{key}: accuracy {ok / len(gold):.3f}, false matches {bad / len(gold):.3f}")
    print(json.dumps({"bench": "semantic_context", "answers": len(gold), "best": best,
                      "supported_rule": grid}))  # fmt: skip


if __name__ == "__main__":
    main()
