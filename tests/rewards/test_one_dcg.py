"""One DCG and one reward definition: the trainer adapters' scalar reward, the diagnostics'
per-prompt statistic and their reward tensors all use `remark_data.rewards`; and that package
stays cheap to import in a trainer."""

import inspect
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remark_data.adapters import payload
from remark_data.diagnose import variance
from remark_data.diagnose.variance import RequestGroup, reward_tensors, sequence_reward
from remark_data.rewards import (
    RequestLabels,
    apply_shape,
    dcg,
    discounted,
    ndcg_at_k,
    rank_discounts,
    rank_rewards,
    responder_rank_rewards,
)

ITEMS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
LISTS = st.lists(st.one_of(st.none(), ITEMS), min_size=1, max_size=8)
RESPONDERS = st.lists(st.sets(ITEMS, max_size=4), min_size=1, max_size=6)
REWARDS = st.lists(st.floats(0, 1), min_size=1, max_size=12)


def test_dcg_by_hand() -> None:
    assert dcg([1.0, 0.0, 1.0]) == 1 + 1 / math.log2(4)
    assert discounted([1.0, 1.0]) == [1.0, 1 / math.log2(3)]
    assert rank_discounts(3) == [1.0, 1 / math.log2(3), 1 / math.log2(4)]
    assert dcg([]) == 0


@settings(max_examples=200, deadline=None)
@given(rewards=REWARDS)
def test_every_dcg_is_the_same_definition(rewards) -> None:
    # log_decay at rank 1 is the whole DCG; the other ranks are its tails.
    assert apply_shape(rewards, "log_decay")[0] == pytest.approx(dcg(rewards))
    # The diagnostics' vectorised DCG equals the pure one, list by list.
    stacked = np.array([rewards, rewards[::-1]])
    assert sequence_reward(stacked).tolist() == pytest.approx(
        [dcg(rewards), dcg(rewards[::-1])], rel=1e-12
    )
    # NDCG's numerator is the DCG of the hits.
    hits = [float(r > 0.5) for r in rewards]
    items = [f"i{k}" if h else None for k, h in enumerate(hits)]
    relevant = {i for i in items if i is not None}
    if relevant:
        ideal = dcg([1.0] * len(relevant))
        assert ndcg_at_k(items, relevant, len(items)) == pytest.approx(dcg(hits) / ideal)


def test_the_adapters_scalar_is_the_rewards_dcg() -> None:
    assert payload.dcg is dcg
    row = {"request_id": "r", "dataset": "d", "responder_item_ids": [["m1"], ["m2"]],
           "seen_item_ids": [], "seen_titles": [],
           "items": [{"item_id": "m1", "title": "Arrival", "year": 2016, "p_hat": 0.5},
                     {"item_id": "m2", "title": "Heat", "year": 1995, "p_hat": 0.5}]}  # fmt: skip
    scorer = payload.PayloadScorer(max_ranks=4)
    text = "1. Heat (1995)\n2. nonsense\n3. Arrival (2016)"
    assert scorer.scalar(text, row) == dcg(scorer.per_rank(text, row)) == 1 + 1 / math.log2(4)


def test_no_module_outside_rewards_computes_a_discount() -> None:
    for module in (payload, variance):
        assert "log2" not in inspect.getsource(module), module.__name__


@settings(max_examples=200, deadline=None)
@given(
    lists=st.lists(LISTS, min_size=2, max_size=4),
    responders=RESPONDERS,
    seen=st.sets(ITEMS, max_size=2),
    shape=st.sampled_from(["exp_inf", "log_decay"]),
)
def test_reward_tensors_are_rank_rewards_stacked(lists, responders, seen, shape) -> None:
    labels = RequestLabels.from_sets(responders, seen=seen)
    ranks = max(len(items) for items in lists)
    responder, union = reward_tensors(RequestGroup("r", labels, lists), ranks=ranks, shape=shape)
    for g, items in enumerate(lists):
        padded = list(items) + [None] * (ranks - len(items))
        assert union[g].tolist() == rank_rewards(padded, labels, reward="union", shape=shape)
        every = responder_rank_rewards(padded, labels, shape=shape)
        for j in range(len(responders)):
            one = rank_rewards(padded, labels, reward="responder", responder=j, shape=shape)
            assert responder[j, g].tolist() == every[j] == one


def test_the_rewards_package_imports_no_dataframe_or_array_library() -> None:
    code = (
        "import sys, remark_data.rewards, remark_data.adapters.payload\n"
        "print(sorted(m for m in ('polars', 'numpy', 'duckdb', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
