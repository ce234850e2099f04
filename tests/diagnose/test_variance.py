"""The variance decomposition against a direct Monte Carlo simulation on real labels: draw a
cell and a responder J, recompute the advantages with the plain-Python reward code."""

import json
import random
import re
import statistics

import pytest

from remark_data.diagnose.rollouts import (
    SAMPLED_RANKS,
    Rollouts,
    diagnose_labels,
    groups_from_completions,
    label_rows,
    popularity_groups,
    protoqa_prediction_rollouts,
    read_rollouts,
)
from remark_data.diagnose.variance import RequestGroup, diagnose
from remark_data.errors import RemarkError
from remark_data.rewards import group_advantages, rank_rewards
from tests.conftest import CORPUS, run_folder

RANKS = 20


def _monte_carlo_share(groups, *, scaled: bool, draws: int, seed: int) -> tuple[float, float]:
    """(share, standard error) from draws of (cell, J, J'): E[(A_J − A_J')²]/2 / Var(A)."""
    tables = []  # per request: A[j][g][k] recomputed from scratch
    for group in groups:
        padded = [list(items[:RANKS]) + [None] * (RANKS - len(items)) for items in group.lists]
        per_j = []
        for j in range(group.labels.n_responders):
            rewards = [
                rank_rewards(items, group.labels, reward="responder", responder=j)
                for items in padded
            ]
            per_j.append(group_advantages(rewards, scaled=scaled))
        tables.append(per_j)
    weights = [len(group.lists) * RANKS for group in groups]  # every cell equally likely
    rng = random.Random(seed)
    batches = []
    for _ in range(20):
        values, halves = [], []
        for index in rng.choices(range(len(groups)), weights=weights, k=draws // 20):
            per_j = tables[index]
            g = rng.randrange(len(per_j[0]))
            k = rng.randrange(RANKS)
            a1 = per_j[rng.randrange(len(per_j))][g][k]
            a2 = per_j[rng.randrange(len(per_j))][g][k]
            values.append(a1)
            halves.append((a1 - a2) ** 2 / 2)
        batches.append(statistics.fmean(halves) / statistics.pvariance(values))
    return statistics.fmean(batches), statistics.stdev(batches) / len(batches) ** 0.5


def _reddit_groups(project, *, source: str):
    labels = run_folder(project, "reddit_v2").read("aggregate", "labels")
    rows = label_rows(labels)
    if source == "popularity":
        return popularity_groups(rows, group_size=8, ranks=RANKS, seed=1)
    # The real 20-line completions of the rows, one list per row, G = n_x per request.
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    by_prompt = {row["prompt"]: row["request_id"] for row in rows}
    completions: dict[str, list[str]] = {}
    for sample in samples:
        completions.setdefault(by_prompt[sample["prompt"][0]["content"]], []).append(
            sample["completion"][0]["content"]
        )
    return groups_from_completions(rows, completions, ranks=RANKS)


def _protoqa_groups(project):
    labels = run_folder(project, "protoqa").read("aggregate", "labels")
    rows = label_rows(labels.filter(labels["source"] == "dev-crowdsourced"))
    rollouts = protoqa_prediction_rollouts(
        CORPUS / "protoqa/dev.predictions.human.jsonl",
        CORPUS / "protoqa/dev.predictions.gpt2finetuned.json",
    )
    return groups_from_completions(rows, rollouts.completions, ranks=RANKS)


@pytest.mark.parametrize("case", ["reddit-popularity", "reddit-completions", "protoqa-predictions"])
@pytest.mark.parametrize("scaled", [True, False])
def test_decomposition_agrees_with_monte_carlo(built_project, case, scaled) -> None:
    if case == "protoqa-predictions":
        groups = _protoqa_groups(built_project)
    else:
        groups = _reddit_groups(built_project, source=case.split("-")[1])
    groups = [g for g in groups if len(g.lists) >= 2]
    assert len(groups) >= 10
    report = diagnose(groups, ranks=RANKS)
    exact = report.responder_share_scaled if scaled else report.responder_share_unscaled
    estimate, error = _monte_carlo_share(groups, scaled=scaled, draws=40_000, seed=7)
    assert abs(exact - estimate) < 4 * error + 0.005, (exact, estimate, error)
    assert 0.0 < exact < 1.0


def test_no_signal_fractions_by_direct_count(built_project) -> None:
    groups = _protoqa_groups(built_project)
    report = diagnose(groups, ranks=RANKS)
    union_cells = resp_cells = cells = 0.0
    for group in groups:
        padded = [list(items[:RANKS]) + [None] * (RANKS - len(items)) for items in group.lists]
        union = [rank_rewards(items, group.labels, reward="union") for items in padded]
        for k in range(RANKS):
            cells += 1
            union_cells += len({row[k] for row in union}) == 1
            flat = 0
            for j in range(group.labels.n_responders):
                column = {
                    rank_rewards(items, group.labels, reward="responder", responder=j)[k]
                    for items in padded
                }
                flat += len(column) == 1
            resp_cells += flat / group.labels.n_responders
    assert report.no_signal_cells_union == pytest.approx(union_cells / cells)
    assert report.no_signal_cells_responder == pytest.approx(resp_cells / cells)
    assert report.no_signal_cells_union < report.no_signal_cells_responder


def _ten_item_rollouts(project):
    """The sample's real completions cut to their first 10 lines: G = n_x lists of 10 items."""
    labels = run_folder(project, "reddit_v2").read("aggregate", "labels")
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    by_prompt = dict(zip(labels["prompt"], labels["request_id"], strict=True))
    completions: dict[str, list[str]] = {}
    for sample in samples:
        text = "\n".join(sample["completion"][0]["content"].splitlines()[:10])
        completions.setdefault(by_prompt[sample["prompt"][0]["content"]], []).append(text)
    return labels, Rollouts(completions=completions, source="ten.jsonl")


def test_ranks_default_to_the_longest_list_and_a_longer_k_is_refused(built_project) -> None:
    labels, rollouts = _ten_item_rollouts(built_project)
    inferred = diagnose_labels(labels, policy="ten", rollouts=rollouts)
    explicit = diagnose_labels(labels, policy="ten", rollouts=rollouts, ranks=10)
    assert inferred["ranks"].to_list() == [10]
    assert inferred.equals(explicit)
    with pytest.raises(RemarkError, match=r"K = 20 .* longest list in ten.jsonl has 10 ranks"):
        diagnose_labels(labels, policy="ten", rollouts=rollouts, ranks=20)
    # What K = 20 used to report on these lists: ranks 11-20 empty, counted as no-signal cells.
    groups = groups_from_completions(label_rows(labels), rollouts.completions)
    padded = diagnose(groups, ranks=20)
    assert diagnose(groups).ranks == 10
    row = inferred.row(0, named=True)
    assert padded.no_signal_cells_union == pytest.approx(0.5 + row["no_signal_cells_union"] / 2)
    assert padded.no_signal_cells_responder > row["no_signal_cells_responder"]
    # Fewer ranks than the lists have is allowed: the lists are cut to K.
    short = diagnose_labels(labels, policy="ten", rollouts=rollouts, ranks=5)
    assert short["ranks"].to_list() == [5]


def test_popularity_sampler_default_ranks(built_project) -> None:
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    report = diagnose_labels(labels, policy="popularity", group_size=4)
    assert report["ranks"].to_list() == [SAMPLED_RANKS] == [10]


def test_rollouts_matching_no_request_are_refused(built_project) -> None:
    labels = run_folder(built_project, "reddit_v2").read("aggregate", "labels")
    rollouts = Rollouts(completions={"nope": ["1. Heat", "2. Alien"]}, source="other.jsonl")
    with pytest.raises(RemarkError, match=r"none of the 1 request ids in other.jsonl"):
        diagnose_labels(labels, policy="x", rollouts=rollouts)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"request_id": "r2", "completions": "1. The Matrix"}', "completions"),
        ('{"request_id": 3, "completions": ["1. Heat"]}', "request_id"),
        ('{"request_id": "r2", "completions": ["1. Heat", 7]}', "completions.1"),
        ('{"request_id": "r2"}', "completions"),
        ("{not json", "Invalid JSON"),
        ("[1, 2]", "object"),
    ],
)
def test_a_bad_rollouts_line_is_an_error_naming_file_and_line(tmp_path, line, message) -> None:
    path = tmp_path / "lists.jsonl"
    good = json.dumps({"request_id": "r1", "completions": ["1. Heat (1995)", "1. Alien"]})
    path.write_text(f"{good}\n\n{line}\n")
    with pytest.raises(RemarkError, match=rf"{re.escape(str(path))}:3: .*{re.escape(message)}"):
        read_rollouts(path)
    path.write_text(f"{good}\n{good}\n")
    rollouts = read_rollouts(path)
    assert rollouts.completions == {"r1": ["1. Heat (1995)", "1. Alien"] * 2}
    assert rollouts.source == str(path)


def test_diagnose_infers_ranks_from_the_groups() -> None:
    from remark_data.rewards import RequestLabels

    labels = RequestLabels.from_sets([{"a"}, {"b"}])
    group = RequestGroup("r", labels, [["a", "b", None], ["b"]])
    assert diagnose([group]).ranks == 3
    assert diagnose([group], ranks=5).ranks == 5
