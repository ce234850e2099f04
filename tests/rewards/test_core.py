"""Hand-computed cases for every reward, shape, eligibility rule, metric and advantage, and
property tests of the definitions' invariants."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remark_data.diagnose.variance import RequestGroup, advantages, reward_tensors
from remark_data.rewards import (
    ListScorer,
    RequestLabels,
    apply_shape,
    eligibility,
    group_advantages,
    ndcg_at_k,
    rank_rewards,
    recall_at_k,
    responder_metric,
)
from remark_data.stages.stats import binary_reward_std, prop2_bound

# Three responders: S_0 = {a, b}, S_1 = {a}, S_2 = {c}; seen = {s}.
LABELS = RequestLabels.from_sets([{"a", "b"}, {"a"}, {"c"}], seen={"s"})
LIST = ["a", None, "x", "a", "s", "c", "b"]  # x: not in any set; a repeated; s seen


def test_labels_derive_counts_and_p_hat() -> None:
    assert LABELS.union == {"a", "b", "c"}
    assert LABELS.p_hat == {"a": 2 / 3, "b": 1 / 3, "c": 1 / 3}


def test_eligibility_rules() -> None:
    assert eligibility(LIST, seen={"s"}) == [1, 0, 1, 0, 0, 1, 1]


@pytest.mark.parametrize(
    ("reward", "responder", "expected"),
    [
        ("union", None, [1, 0, 0, 0, 0, 1, 1]),
        ("marginal", None, [2 / 3, 0, 0, 0, 0, 1 / 3, 1 / 3]),
        ("responder", 0, [1, 0, 0, 0, 0, 0, 1]),
        ("responder", 1, [1, 0, 0, 0, 0, 0, 0]),
        ("responder", 2, [0, 0, 0, 0, 0, 1, 0]),
    ],
)
def test_exp_inf_rewards(reward, responder, expected) -> None:
    got = rank_rewards(LIST, LABELS, reward=reward, responder=responder, shape="exp_inf")
    assert got == pytest.approx(expected)


def test_log_decay_is_the_tail_dcg() -> None:
    # union r = [1,0,0,0,0,1,1]: DCG@k:7 = Σ_{m>=k} r_m / log2(m+1)
    tail = (
        [1 / math.log2(2) + 1 / math.log2(7) + 1 / math.log2(8)]
        + [1 / math.log2(7) + 1 / math.log2(8)] * 5
        + [1 / math.log2(8)]
    )
    assert rank_rewards(LIST, LABELS, reward="union", shape="log_decay") == pytest.approx(tail)
    marginal = rank_rewards(LIST, LABELS, reward="marginal", shape="log_decay")
    assert marginal[0] == pytest.approx(2 / 3 + (1 / 3) / math.log2(7) + (1 / 3) / math.log2(8))
    with pytest.raises(ValueError, match="unknown shape"):
        apply_shape([1.0], "linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs the responder"):
        rank_rewards(LIST, LABELS, reward="responder")


def test_group_advantages_scaled_and_unscaled() -> None:
    rewards = [[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    std = math.sqrt(((0.5**2) * 4) / 3)  # unbiased std of [1,0,1,0]
    scaled = group_advantages(rewards)
    assert [row[0] for row in scaled] == pytest.approx(
        [0.5 / (std + 1e-4), -0.5 / (std + 1e-4)] * 2
    )
    assert [row[1] for row in scaled] == [0.0] * 4  # a no-signal rank
    assert [row[0] for row in group_advantages(rewards, scaled=False)] == [0.5, -0.5, 0.5, -0.5]


def test_metrics() -> None:
    assert recall_at_k(LIST, LABELS.union, 1) == pytest.approx(1 / 3)
    assert recall_at_k(LIST, LABELS.union, 7) == pytest.approx(1.0)
    # hits at ranks 1, 6, 7 (the repeat at 4 does not count); ideal: 3 hits at ranks 1-3.
    dcg = 1 + 1 / math.log2(7) + 1 / math.log2(8)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(LIST, LABELS.union, 10) == pytest.approx(dcg / ideal)
    assert recall_at_k(LIST, set(), 5) is None
    assert responder_metric(LIST, LABELS, 7) == pytest.approx([1.0, 1.0, 1.0])
    assert responder_metric(LIST, LABELS, 3) == pytest.approx([0.5, 1.0, 0.0])


def test_proposition_2_bound() -> None:
    assert prop2_bound(8) == pytest.approx(1.512, abs=5e-4)
    assert binary_reward_std(4, 8) / binary_reward_std(1, 8) == pytest.approx(prop2_bound(8))


def test_scorer_grounds_seen_titles_and_years() -> None:
    row = {
        "request_id": "r",
        "responder_item_ids": [["m1"], ["m1", "m2"]],
        "seen_item_ids": [],
        "seen_titles": ["Arrival"],
        "items": [
            {"item_id": "m1", "title": "Arrival", "year": 2016, "p_hat": 1.0},
            {"item_id": "m2", "title": "Heat", "year": 1995, "p_hat": 0.5},
        ],
    }
    scorer = ListScorer()
    text = "1. Heat (1995)\n2. stray words\n3. Arrival (2016)\n4. Heat (1995)\n5. Heat (1960)"
    assert scorer.ground(text, row) == ["m2", None, "m1", "m2", None]
    # Arrival is seen (e=0), the second Heat repeats (e=0), Heat (1960) is outside ±2 years.
    assert scorer.rewards(text, row) == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert scorer.rewards(text, row, reward="marginal") == [0.5, 0.0, 0.0, 0.0, 0.0]


# ---- properties -------------------------------------------------------------------------------
ITEMS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
LISTS = st.lists(st.one_of(st.none(), ITEMS), min_size=1, max_size=8)
RESPONDERS = st.lists(st.sets(ITEMS, max_size=4), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    items=LISTS,
    responders=RESPONDERS,
    seen=st.sets(ITEMS, max_size=2),
    shape=st.sampled_from(["exp_inf", "log_decay"]),
)
def test_union_dominates_every_responder_and_the_mean_is_marginal(
    items, responders, seen, shape
) -> None:
    labels = RequestLabels.from_sets(responders, seen=seen)
    union = rank_rewards(items, labels, reward="union", shape=shape)
    per_responder = [
        rank_rewards(items, labels, reward="responder", responder=j, shape=shape)
        for j in range(len(responders))
    ]
    for rewards in per_responder:
        assert all(u >= r - 1e-12 for u, r in zip(union, rewards, strict=True))
    mean = [sum(col) / len(responders) for col in zip(*per_responder, strict=True)]
    marginal = rank_rewards(items, labels, reward="marginal", shape=shape)
    assert mean == pytest.approx(marginal)  # Proposition 1


@settings(max_examples=200, deadline=None)
@given(lists=st.lists(LISTS, min_size=2, max_size=5), responders=RESPONDERS)
def test_a_rank_without_union_hits_is_no_signal_under_every_responder(lists, responders) -> None:
    labels = RequestLabels.from_sets(responders)
    ranks = max(len(items) for items in lists)
    responder, union = reward_tensors(RequestGroup("r", labels, lists), ranks=ranks)
    for k in range(ranks):
        if union[:, k].max() == 0:
            assert (responder[:, :, k] == 0).all()
            assert (advantages(responder, scaled=True)[:, :, k] == 0).all()


def test_dataset_metrics_weight_rows_and_requests_differently() -> None:
    from remark_data.rewards import dataset_metrics

    many = RequestLabels.from_sets([{"a"}, {"b"}, {"b"}, {"b"}])  # 4 responders
    one = RequestLabels.from_sets([{"a"}])
    metrics = dataset_metrics([(["b", None], many), (["x", "a"], one)], k=2)
    # union recall: {a,b} -> 1/2 ; {a} -> 1
    assert metrics["recall_union"] == pytest.approx(0.75)
    # per row: [0, 1, 1, 1] and [1] -> 4/5 ; per request: 3/4 and 1 -> 7/8
    assert metrics["recall_responder_per_row"] == pytest.approx(0.8)
    assert metrics["recall_responder_per_request"] == pytest.approx(0.875)
    # NDCG vs union: "b" at rank 1 of ideal 2 hits; "a" at rank 2 of ideal 1 hit.
    first = 1 / (1 + 1 / math.log2(3))
    second = 1 / math.log2(3)
    assert metrics["ndcg_union"] == pytest.approx((first + second) / 2)


@pytest.mark.parametrize("max_ranks", [0, -1, 2.5, True, "20"])
def test_scorer_refuses_a_bad_rank_count_when_built(max_ranks) -> None:
    with pytest.raises(ValueError, match="max_ranks must be a positive integer"):
        ListScorer(max_ranks=max_ranks)


def test_check_reward_names_the_choices() -> None:
    from remark_data.rewards import check_reward

    check_reward("union", "log_decay")
    with pytest.raises(ValueError, match=r"unknown reward 'nope' \(one of responder, union"):
        check_reward("nope", "exp_inf")
    with pytest.raises(ValueError, match=r"unknown shape 'bogus' \(one of exp_inf, log_decay\)"):
        check_reward("union", "bogus")
