"""verl and OpenRLHF shims called exactly as those frameworks call them."""

import importlib.util
import json
import math

import polars as pl
import pytest

from remark_data.adapters.export import export_labels
from remark_data.adapters.trl import make_reward_func, to_trl_dataset
from remark_data.errors import RemarkError
from remark_data.stages.ground.matching import normalize_title
from tests.conftest import REPO, run_folder


@pytest.fixture(scope="module")
def labels(built_project):
    return run_folder(built_project, "reddit_v2").read("aggregate", "labels")


def _completion(row: dict) -> str:
    # Half union titles, a stray line, a repeat: a realistic generated list.
    titles = [f"{i['title']} ({i['year']})" for i in row["items"]]
    return "\n".join(["Here you go:", *titles, titles[0], "Nonexistent Movie (1999)"])


def _load_file_module(path, name):
    """How verl and OpenRLHF load a custom reward file: by path, not by package import."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verl_rows_and_compute_score(labels, tmp_path) -> None:
    out = tmp_path / "verl"
    export_labels(labels, trainer="verl", out=out)
    frame = pl.read_parquet(out / "train.parquet")
    assert frame.columns == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert frame["data_source"].unique().to_list() == ["remark/reddit_v2"]
    module = _load_file_module(REPO / "remark_data/adapters/verl.py", "verl_reward")
    trl_reward = make_reward_func()
    trl_rows = to_trl_dataset(labels)
    for row, trl_row in zip(frame.iter_rows(named=True), trl_rows, strict=True):
        truth = row["reward_model"]["ground_truth"]
        payload = json.loads(truth)
        text = _completion(payload)
        score = module.compute_score(row["data_source"], text, truth, row["extra_info"])
        columns = {k: [v] for k, v in trl_row.items() if k != "prompt"}
        assert score == pytest.approx(trl_reward(None, [text], **columns)[0])
        # Rank 1 is the stray line; union titles follow, truncated at 20 ranks; a union title the
        # requester has already seen earns nothing.
        seen = {normalize_title(t) for t in payload["seen_titles"]}
        expected = sum(
            1 / math.log2(rank + 1)
            for rank, item in enumerate(payload["items"], start=2)
            if rank <= 20 and normalize_title(item["title"]) not in seen
        )
        assert score == pytest.approx(expected)


def test_openrlhf_jsonl_and_reward_func(labels, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    out = tmp_path / "openrlhf"
    export_labels(labels, trainer="openrlhf", out=out)
    records = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert len(records) == 40 and set(records[0]) == {"input", "label"}
    module = _load_file_module(REPO / "remark_data/adapters/openrlhf.py", "openrlhf_reward")
    prompts = [r["input"] for r in records]
    queries = [
        p + _completion(json.loads(r["label"])) for p, r in zip(prompts, records, strict=True)
    ]
    result = module.reward_func(queries, prompts, [r["label"] for r in records])
    assert isinstance(result["rewards"], torch.Tensor) and result["rewards"].shape == (40,)
    assert (result["rewards"] > 0).all()
    empty = module.reward_func(prompts, prompts, [r["label"] for r in records])
    assert (empty["rewards"] == 0).all()


def test_rank_grpo_export_keeps_its_columns_with_the_union(labels, tmp_path) -> None:
    import datasets

    out = tmp_path / "rank_grpo"
    export_labels(labels, trainer="rank_grpo", out=out)
    dataset = datasets.load_from_disk(str(out / "train"))
    assert {"prompt", "seen_titles", "groundtruth_with_release_year"} <= set(dataset.column_names)
    by_id = {r["request_id"]: r for r in labels.iter_rows(named=True)}
    for row in dataset:
        label = by_id[row["sample_id"]]
        assert row["groundtruth_with_release_year"] == label["groundtruth_with_release_year"]
        assert all(
            len(pair) == 2 and pair[1].isdigit() for pair in row["groundtruth_with_release_year"]
        )


def test_export_rejects_unknown_trainers_and_replaces_atomically(labels, tmp_path) -> None:
    with pytest.raises(RemarkError, match="unknown trainer"):
        export_labels(labels, trainer="ppo", out=tmp_path / "x")  # type: ignore[arg-type]
    out = tmp_path / "verl"
    export_labels(labels, trainer="verl", out=out)
    export_labels(labels.head(5), trainer="verl", out=out)
    assert pl.read_parquet(out / "train.parquet").height == 5
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_verl_and_openrlhf_rewards_pickle_and_check_their_arguments(labels) -> None:
    """Both frameworks may ship the reward to worker processes; verl passes
    `custom_reward_function.reward_kwargs` as keywords, checked before any scoring."""
    import pickle

    from remark_data.adapters import openrlhf, verl
    from remark_data.adapters.payload import PayloadScorer, label_payload

    assert pickle.loads(pickle.dumps(verl.compute_score)) is verl.compute_score
    assert pickle.loads(pickle.dumps(openrlhf.reward_func)) is openrlhf.reward_func
    scorer = PayloadScorer(reward="marginal", shape="log_decay", max_ranks=10)
    payloads = [json.dumps(label_payload(row)) for row in labels.iter_rows(named=True)]
    before = [scorer.per_rank(_completion(json.loads(p)), p) for p in payloads]
    copy = pickle.loads(pickle.dumps(scorer))
    assert [copy.per_rank(_completion(json.loads(p)), p) for p in payloads] == before
    assert len(pickle.dumps(copy)) < 1_000  # the per-row cache stays behind
    truth = payloads[0]
    text = _completion(json.loads(truth))
    marginal = verl.compute_score("remark/reddit_v2", text, truth, None, reward="marginal")
    assert marginal == pytest.approx(PayloadScorer(reward="marginal").scalar(text, truth))
    for bad, message in [({"reward": "nope"}, "reward 'nope'"), ({"max_ranks": 0}, "max_ranks")]:
        with pytest.raises(ValueError, match=message):
            verl.compute_score("remark/reddit_v2", text, truth, None, **bad)
        with pytest.raises(ValueError, match=message):
            PayloadScorer(**bad)
