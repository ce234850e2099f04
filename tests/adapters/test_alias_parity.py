"""Trainers pay what diagnose measures: for the same real completions, the rewards computed from
every exported format (TRL columns, verl ground_truth, OpenRLHF label, the labels rows) equal the
rewards on the rows `remark diagnose` scores, because labels carry each item's match strings."""

import json

import datasets
import polars as pl

from remark_data.adapters.export import export_labels
from remark_data.adapters.openrlhf import reward_func
from remark_data.adapters.payload import label_payload
from remark_data.adapters.trl import make_reward_func, to_trl_dataset
from remark_data.adapters.verl import compute_score
from remark_data.diagnose.rollouts import groups_from_completions, label_rows
from remark_data.rewards import ListScorer
from remark_data.rewards.core import dcg, rank_rewards
from tests.conftest import CORPUS, run_folder


def _protoqa_completions(labels: pl.DataFrame) -> dict[str, list[str]]:
    """ProtoQA's released human answers, one answer per line."""
    known = set(labels["request_id"])
    lists: dict[str, list[str]] = {}
    for line in (CORPUS / "protoqa/dev.predictions.human.jsonl").read_text().splitlines():
        for qid, answers in json.loads(line).items():
            if qid in known:
                lists.setdefault(qid, []).append("\n".join(a or "-" for a in answers))
    return lists


def _reddit_completions(labels: pl.DataFrame) -> dict[str, list[str]]:
    """Rank-GRPO's released SFT completions for these prompts."""
    path = CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json"
    by_prompt = dict(labels.select("prompt", "request_id").iter_rows())
    lists: dict[str, list[str]] = {}
    for sample in json.loads(path.read_text())["samples"]:
        request_id = by_prompt.get(sample["prompt"][0]["content"])
        if request_id is not None:
            lists.setdefault(request_id, []).append(sample["completion"][0]["content"])
    return lists


def _check(labels: pl.DataFrame, completions: dict[str, list[str]], tmp_path) -> int:
    rows = {r["request_id"]: r for r in label_rows(labels)}
    # diagnose: grounded ranks of each completion, scored with the union reward (DCG).
    groups = groups_from_completions(list(rows.values()), completions, ranks=20)
    expected = {
        (g.request_id, k): dcg(rank_rewards(ids, g.labels, reward="union", shape="exp_inf"))
        for g in groups
        for k, ids in enumerate(g.lists)
    }
    assert any(v > 0 for v in expected.values())
    for trainer in ("trl", "verl", "openrlhf"):
        exported = {}
        for path in export_labels(labels, trainer=trainer, out=tmp_path / trainer):
            if trainer == "trl":
                table = datasets.load_from_disk(str(path)).to_list()
                exported |= {r["request_id"]: r for r in table}
            elif trainer == "verl":
                table = pl.read_parquet(path).to_dicts()
                exported |= {r["extra_info"]["request_id"]: r for r in table}
            else:
                table = [json.loads(line) for line in path.read_text().splitlines()]
                exported |= {json.loads(r["label"])["request_id"]: r for r in table}
        trl_reward = make_reward_func(reward="union", max_ranks=20)
        for (request_id, k), value in expected.items():
            text, row = completions[request_id][k], exported[request_id]
            if trainer == "trl":
                columns = {c: [v] for c, v in row.items() if c != "prompt"}
                (got,) = trl_reward(prompts=[row["prompt"]], completions=[text], **columns)
            elif trainer == "verl":
                got = compute_score(row["data_source"], text, row["reward_model"]["ground_truth"])
            else:
                out = reward_func([row["input"] + text], [row["input"]], [row["label"]])
                got = float(out["rewards"][0])  # a float32 tensor
            assert abs(got - value) < 1e-5, (trainer, request_id, k)
    return len(expected)


def test_protoqa_exports_pay_what_diagnose_measures(built_project, tmp_path) -> None:
    labels = run_folder(built_project, "protoqa").read("aggregate", "labels")
    labels = labels.filter(pl.col("source") == "dev-crowdsourced").head(60)
    completions = _protoqa_completions(labels)
    assert _check(labels, completions, tmp_path) >= 50  # one human list per question
    # The answer strings do the work: without them far fewer answers ground.
    no_aliases = pl.element().struct.with_fields(aliases=pl.lit([], dtype=pl.List(pl.String)))
    bare = labels.with_columns(pl.col("items").list.eval(no_aliases))

    def grounded(frame: pl.DataFrame) -> int:
        scorer = ListScorer(max_ranks=20)
        return sum(
            item is not None
            for row in frame.to_dicts()
            for text in completions.get(row["request_id"], [])
            for item in scorer.ground(text, row)
        )

    assert grounded(labels) > 1.3 * grounded(bare)


def test_reddit_v2_exports_pay_what_diagnose_measures(built_project, tmp_path) -> None:
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    assert _check(labels, _reddit_completions(labels), tmp_path) >= 40


def test_trl_reads_the_request_as_labelled_not_the_prompt_a_script_sends(built_project) -> None:
    """ProtoQA r2q25 (why prefer a cat over a dog): "cats are calmer" is matched by the
    semantic step because "calm" is a word of one cluster alone. A training script that adds
    "Stay calm and list answers." to the prompt must not change the reward: the TRL rows carry
    the request as labelled (`request`), as the verl and OpenRLHF labels carry `prompt`."""
    labels = run_folder(built_project, "protoqa").read("aggregate", "labels")
    labels = labels.filter(pl.col("request_id") == "r2q25")
    (row,) = to_trl_dataset(labels).to_list()
    assert row["request"] == labels["prompt"][0]
    columns = {c: [v] for c, v in row.items() if c != "prompt"}
    reward = make_reward_func(reward="union", max_ranks=20)
    templated = [{"role": "user", "content": row["request"] + "\nStay calm and list answers."}]
    (got,) = reward(prompts=[templated], completions=["cats are calmer"], **columns)
    payload = json.dumps(label_payload(labels.row(0, named=True)))
    assert got == compute_score("protoqa", "cats are calmer", payload) == 1.0
