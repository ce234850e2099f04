"""Popularity bias of rewards on the real runs: the popularity sampler's lists favour head items,
and per-question answer clusters (ProtoQA) have no popularity to speak of."""

import math

import polars as pl

from remark_data.diagnose.popularity import item_popularity, popularity_deciles
from remark_data.diagnose.rollouts import diagnose_labels, protoqa_prediction_rollouts
from tests.conftest import CORPUS, run_folder


def test_a_popularity_sampler_is_paid_mostly_for_head_items(built_project) -> None:
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    row = diagnose_labels(labels, policy="popularity", group_size=8, ranks=10).row(0, named=True)
    union, responder = row["recall_by_decile_union"], row["recall_by_decile_responder"]
    assert len(union) == len(responder) == 10
    assert union[0] > union[-1] and responder[0] > responder[-1]
    # The top 10% of items earn far more than 10% of what the lists are paid.
    assert 0.2 < row["top_decile_reward_share_union"] <= 1.0
    assert 0.2 < row["top_decile_reward_share_responder"] <= 1.0
    # Deciles: equal-size bins of the split's union items, most named first.
    popularity = item_popularity(labels["union_item_ids"].to_list())
    deciles = popularity_deciles(popularity)
    sizes = pl.Series(list(deciles.values())).value_counts()["count"]
    assert sizes.max() - sizes.min() <= 1
    head = [i for i, d in deciles.items() if d == 0]
    tail = [i for i, d in deciles.items() if d == 9]
    assert min(popularity[i] for i in head) >= max(popularity[i] for i in tail)


def test_answer_clusters_have_no_popularity_deciles(built_project) -> None:
    labels = run_folder(built_project, "protoqa").read("aggregate", "labels")
    labels = labels.filter(pl.col("source") == "dev-crowdsourced")
    rollouts = protoqa_prediction_rollouts(
        CORPUS / "protoqa/dev.predictions.human.jsonl",
        CORPUS / "protoqa/dev.predictions.gpt2finetuned.json",
    )
    row = diagnose_labels(labels, policy="protoqa", rollouts=rollouts).row(0, named=True)
    assert row["recall_by_decile_union"] == []
    assert math.isnan(row["top_decile_reward_share_union"])
