"""A real TRL GRPOTrainer, 2 steps on the exported Reddit-v2 labels with our reward function."""

import math
import re

import pytest

from remark_data.adapters.export import export_labels
from remark_data.adapters.trl import make_rank_reward_func, make_reward_func, to_trl_dataset
from remark_data.stages.ground.matching import normalize_title
from tests.conftest import run_folder

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")


def _tiny_model_and_tokenizer(texts):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.train_from_iterator(
        texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<pad>", "<s>", "</s>"])
    )
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
    )
    wrapped.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    config = LlamaConfig(
        vocab_size=len(wrapped), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
        pad_token_id=wrapped.pad_token_id, bos_token_id=wrapped.bos_token_id,
        eos_token_id=wrapped.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(config), wrapped


def test_grpo_trainer_calls_our_reward_with_label_columns(
    built_project, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    out = tmp_path / "trl"
    export_labels(labels, trainer="trl", out=out)
    import datasets

    dataset = datasets.load_from_disk(str(out / "train"))
    assert dataset.num_rows == 40 and dataset[0]["prompt"][0]["role"] == "user"
    # Short prompts keep the tiny model fast; the label columns are the real ones.
    dataset = dataset.map(
        lambda row: {"prompt": [{"role": "user", "content": row["prompt"][0]["content"][-200:]}]}
    )

    reward = make_reward_func()
    calls = []

    def remark_union(prompts, completions, **kwargs):
        calls.append(kwargs)
        return reward(prompts, completions, **kwargs)

    model, tokenizer = _tiny_model_and_tokenizer(
        [r["prompt"][0]["content"] for r in dataset] + labels["prompt"].to_list()
    )
    config = trl.GRPOConfig(
        output_dir=str(tmp_path / "run"), use_cpu=True, report_to=[], num_generations=4,
        per_device_train_batch_size=4, max_completion_length=16, max_steps=2, save_strategy="no",
        logging_steps=1,
    )  # fmt: skip
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=remark_union,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    assert calls, "reward function never called"
    for kwargs in calls:
        for column in (
            "request_id",
            "items",
            "responder_item_ids",
            "seen_item_ids",
            "seen_titles",
            "union_item_ids",
        ):
            assert column in kwargs
        assert set(kwargs["request_id"]) <= set(labels["request_id"])
    logged = [entry for entry in trainer.state.log_history if "rewards/remark_union/mean" in entry]
    assert len(logged) == 2
    assert all("frac_reward_zero_std" in entry for entry in logged)


def _independent_union_rewards(text: str, row: dict) -> list[float]:
    """Straight from the definition: "Title (Year)" lines, union titles within ±2 years."""
    union = {(normalize_title(i["title"]), i["year"]) for i in row["items"]}
    seen = {normalize_title(t) for t in row["seen_titles"]}
    rewards, earlier = [], set()
    for line in [line for line in text.splitlines() if line.strip()][:20]:
        found = re.match(r"^(.*?)\s*\((\d{3,4})\)\s*$", line.strip())
        key = (normalize_title(found[1]), int(found[2])) if found else None
        hit = next((u for u in union if key and u[0] == key[0] and abs(u[1] - key[1]) <= 2), None)
        rewards.append(float(hit is not None and hit not in earlier and key[0] not in seen))
        if hit is not None:
            earlier.add(hit)
    return rewards + [0.0] * (20 - len(rewards))


def test_reward_functions_on_real_completions(built_project) -> None:
    """Rows scored with the real 20-line completions of the Reddit-v2 sample."""
    import json

    from tests.conftest import CORPUS

    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    dataset = to_trl_dataset(labels)
    by_prompt = {row["prompt"][0]["content"]: row for row in dataset}
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    rows = [by_prompt[s["prompt"][0]["content"]] for s in samples]
    columns = {c: [r[c] for r in rows] for c in rows[0] if c != "prompt"}
    completions = [
        [{"role": "assistant", "content": s["completion"][0]["content"]}] for s in samples
    ]
    per_rank = make_rank_reward_func()(None, completions, **columns)
    scalar = make_reward_func()(None, completions, **columns)
    for row, completion, ranks, value in zip(rows, completions, per_rank, scalar, strict=True):
        assert ranks == _independent_union_rewards(completion[0]["content"], row)
        assert value == pytest.approx(sum(r / math.log2(k + 2) for k, r in enumerate(ranks)))
    assert sum(map(sum, per_rank)) > 50  # the sample's completions do hit the unions
    # Rows without labels (another task in a mixed dataset) are outside the reward's scope.
    missing = {**columns, "responder_item_ids": [None] * len(rows)}
    assert make_reward_func()(None, completions, **missing) == [None] * len(rows)


def _real_rows_and_completions(project):
    """Exported TRL rows with the Reddit-v2 sample's real 20-line completions."""
    import json

    from tests.conftest import CORPUS

    dataset = to_trl_dataset(run_folder(project, "reddit_v2").read("aggregate", "labels"))
    by_prompt = {row["prompt"][0]["content"]: row for row in dataset}
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    rows = [by_prompt[s["prompt"][0]["content"]] for s in samples]
    columns = {c: [r[c] for r in rows] for c in rows[0] if c != "prompt"}
    completions = [
        [{"role": "assistant", "content": s["completion"][0]["content"]}] for s in samples
    ]
    return [r["prompt"] for r in rows], completions, columns


@pytest.mark.parametrize(
    ("factory", "kwargs", "name"),
    [
        (make_reward_func, {}, "remark_union_exp_inf"),
        (
            make_reward_func,
            {"reward": "marginal", "shape": "log_decay"},
            "remark_marginal_log_decay",
        ),
        (make_rank_reward_func, {"max_ranks": 10}, "remark_union_exp_inf_per_rank"),
    ],
)
def test_reward_functions_survive_pickling(built_project, factory, kwargs, name) -> None:
    """Multiprocessing reward managers (verl's, TRL over several processes) pickle rewards."""
    import pickle

    from trl.trainer.utils import get_callable_name, is_async_callable

    prompts, completions, columns = _real_rows_and_completions(built_project)
    reward = factory(**kwargs)
    before = reward(prompts=prompts, completions=completions, **columns)  # fills the row cache
    copy = pickle.loads(pickle.dumps(reward))
    assert copy(prompts=prompts, completions=completions, **columns) == before
    assert sum(map(sum, before)) > 0 if factory is make_rank_reward_func else sum(before) > 0
    # TRL logs each reward under get_callable_name and awaits only async callables.
    assert get_callable_name(reward) == get_callable_name(copy) == name
    assert not is_async_callable(copy)
    # TRL also passes trainer_state, log_extra, log_metric and completion_ids: ignored.
    extra = {"trainer_state": None, "log_extra": print, "log_metric": print, "completion_ids": []}
    assert copy(prompts=prompts, completions=completions, **columns, **extra) == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shape": "bogus"}, "shape 'bogus'"),
        ({"reward": "nope"}, "reward 'nope'"),
        ({"reward": "responder"}, "responder"),
        ({"max_ranks": 0}, "max_ranks"),
        ({"max_ranks": -3}, "max_ranks"),
        ({"max_ranks": 2.5}, "max_ranks"),
        ({"max_ranks": True}, "max_ranks"),
    ],
)
@pytest.mark.parametrize("factory", [make_reward_func, make_rank_reward_func])
def test_bad_reward_arguments_fail_when_built(factory, kwargs, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        factory(**kwargs)
