"""Benchmark: rewards for one GRPO step (48 requests × G = 8 lists × 20 ranks).

Real Reddit-v2 labels (the 40 requests of the sample, cycled to 48) and the real 20-line
`completion` lists of the Reddit-v2 rows (8 per request, drawn from the 100). Ours: the TRL
per-rank reward function (`union`, `exp_inf`), parsing included. Baseline in the same run: a
straightforward per-item Python implementation (regex per line, a linear scan of the union for
each item, no caches). Both must produce identical rewards.

Then the same step on ProtoQA's dev questions with the answer matcher chain of
pipelines/protoqa.toml: 48 of the 52 crowdsourced questions x 8 lists of 20 answers drawn from
the real human and GPT-2 answer lists for that question. "Cold" clears every cache the matcher
keeps (keys, lemma keys, WordNet lookups, matchers); WordNet's index is loaded once per process
and its load is timed apart. Baseline: exact match of each answer against every string of every
cluster, with no caches. The semantic step (batched sentence embeddings) is timed apart, with the
embedding cache cleared but the model loaded. The last line is one JSON object.

    python benchmarks/bench_rewards.py [--steps 30]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"
REQUESTS, GROUP, RANKS = 48, 8, 20


def build_step(seed: int) -> tuple[list[str], dict[str, list]]:
    """One step's completions and the TRL label columns for them."""
    from remark_data.adapters.trl import to_trl_dataset
    from remark_data.config import Project, load_pipeline_spec
    from remark_data.pipeline import PipelineRun
    from remark_data.runner import RunFolder

    root = Path(tempfile.mkdtemp())
    (root / "data").mkdir()
    (root / "data" / "sources.toml").write_text((REPO / "data" / "sources.toml").read_text())
    project = Project(root=root, mirror=CORPUS)
    spec = load_pipeline_spec(REPO / "pipelines" / "reddit_v2.toml")
    PipelineRun(spec=spec, project=project).run()
    rows = list(
        to_trl_dataset(RunFolder(project.runs_dir / "reddit_v2").read("aggregate", "labels"))
    )
    samples = json.loads((CORPUS / "rank_grpo/reddit_v2_sft_train_sample100.json").read_text())[
        "samples"
    ]
    texts = [s["completion"][0]["content"] for s in samples]
    rng = random.Random(seed)
    chosen = [rows[i % len(rows)] for i in range(REQUESTS)]
    completions, columns = [], {c: [] for c in chosen[0] if c != "prompt"}
    for row in chosen:
        for _ in range(GROUP):
            completions.append(rng.choice(texts))
            for column in columns:
                columns[column].append(row[column])
    return completions, columns


_LINE = re.compile(r"^\s*(?:\d+[.)]\s*)?(.*?)\s*\((\d{3,4})\)\s*$")


def baseline_rewards(completions: list[str], columns: dict[str, list]) -> list[list[float]]:
    """Per item: regex-parse the line, normalise, scan the union linearly (Rank-GRPO's way,
    but keeping unparseable lines as empty ranks)."""
    from remark_data.stages.ground.matching import normalize_title

    normalize = normalize_title.__wrapped__  # no cache, as a plain implementation would be
    out = []
    for index, text in enumerate(completions):
        union = [(normalize(i["title"]), i["year"]) for i in columns["items"][index]]
        seen = [normalize(t) for t in columns["seen_titles"][index]]
        rewards, earlier = [], []
        for line in [line for line in text.splitlines() if line.strip()][:RANKS]:
            found = _LINE.match(line)
            hit = None
            if found:
                key, year = normalize(found[1]), int(found[2])
                for title, item_year in union:
                    if title == key and abs(item_year - year) <= 2:
                        hit = (title, item_year)
                        break
                if hit is not None and (hit in earlier or key in seen):
                    earlier.append(hit)
                    hit = None
                elif hit is not None:
                    earlier.append(hit)
            rewards.append(float(hit is not None))
        out.append(rewards + [0.0] * (RANKS - len(rewards)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    from remark_data.adapters.trl import make_rank_reward_func
    from remark_data.rewards.parse import parse_entry, parse_line
    from remark_data.stages.ground.matching import normalize_title

    completions, columns = build_step(seed=0)
    expected = baseline_rewards(completions, columns)
    ours_cold, ours_warm, base = [], [], []
    for _ in range(args.steps):
        reward = make_rank_reward_func()  # fresh per-row cache
        normalize_title.cache_clear()
        parse_line.cache_clear()
        parse_entry.cache_clear()
        start = time.perf_counter()
        got = reward(None, completions, **columns)
        ours_cold.append(time.perf_counter() - start)
        start = time.perf_counter()
        reward(None, completions, **columns)
        ours_warm.append(time.perf_counter() - start)
        start = time.perf_counter()
        baseline_rewards(completions, columns)
        base.append(time.perf_counter() - start)
        assert got == expected, "implementations disagree"
    cold, warm, plain = (statistics.median(x) * 1000 for x in (ours_cold, ours_warm, base))
    hits = sum(map(sum, expected))
    print(f"rewards for one step: {REQUESTS} requests x G={GROUP} x {RANKS} ranks "
          f"({len(completions)} real completions, {hits:.0f} union hits), "
          f"median of {args.steps}")  # fmt: skip
    print(
        f"  remark union/exp_inf, cold caches: {cold:6.2f} ms  ({plain / cold:.1f}x the baseline)"
    )
    print(
        f"  remark union/exp_inf, warm caches: {warm:6.2f} ms  ({plain / warm:.1f}x the baseline)"
    )
    print(f"  per-item Python baseline:          {plain:6.2f} ms")
    print("  target: < 20 ms per step (Rank-GRPO's shipped reward: ~70 ms here, per the issue)")
    reddit = {
        "reddit_cold_ms": round(cold, 2),
        "reddit_warm_ms": round(warm, 2),
        "reddit_baseline_ms": round(plain, 2),
        "reddit_cold_vs_baseline": round(plain / cold, 2),
    }
    print(json.dumps({"bench": "rewards", **reddit, **protoqa(args.steps)}))


def build_protoqa_step(seed: int) -> tuple[list[str], dict[str, list]]:
    """ProtoQA dev labels (TRL columns) and 8 real-answer lists of 20 per question."""
    from remark_data.adapters.trl import to_trl_dataset
    from remark_data.config import Project, load_pipeline_spec
    from remark_data.pipeline import PipelineRun
    from remark_data.runner import RunFolder

    root = Path(tempfile.mkdtemp())
    (root / "data").mkdir()
    (root / "data" / "sources.toml").write_text((REPO / "data" / "sources.toml").read_text())
    project = Project(root=root, mirror=CORPUS)
    spec = load_pipeline_spec(REPO / "pipelines" / "protoqa.toml")
    PipelineRun(spec=spec, project=project).run(stages=("scrape", "ground", "aggregate"))
    labels = RunFolder(project.runs_dir / "protoqa").read("aggregate", "labels")
    rows = {r["request_id"]: r for r in to_trl_dataset(labels) if r["request_id"][:1] == "r"}
    answers: dict[str, list[str]] = {}
    for line in (CORPUS / "protoqa/dev.predictions.human.jsonl").read_text().splitlines():
        for qid, listed in json.loads(line).items():
            answers.setdefault(qid, []).extend(a for a in listed if a)
    gpt2 = json.loads((CORPUS / "protoqa/dev.predictions.gpt2finetuned.json").read_text())
    for qid, listed in gpt2.items():
        answers.setdefault(qid, []).extend(a for a in listed if a)
    rng = random.Random(seed)
    chosen = sorted(rows)[:REQUESTS]
    completions, columns = [], {c: [] for c in rows[chosen[0]] if c != "prompt"}
    for qid in chosen:
        for _ in range(GROUP):
            picked = rng.sample(answers[qid], min(RANKS, len(answers[qid])))
            completions.append("\n".join(f"{n}. {a}" for n, a in enumerate(picked, 1)))
            for column in columns:
                columns[column].append(rows[qid][column])
    return completions, columns


def exact_baseline(completions: list[str], columns: dict[str, list]) -> list[list[float]]:
    """Each answer against every string of every cluster, exactly (lower-cased), no caches."""
    out = []
    for index, text in enumerate(completions):
        clusters = [
            {s.lower() for s in [i["title"], *i["aliases"]]} for i in columns["items"][index]
        ]
        rewards, paid = [], set()
        for line in text.splitlines()[:RANKS]:
            answer = re.sub(r"^\d+\.\s*", "", line).strip().lower()
            hit = next((n for n, c in enumerate(clusters) if answer in c), None)
            rewards.append(float(hit is not None and hit not in paid))
            paid.add(hit)
        out.append(rewards)
    return out


def protoqa(steps: int) -> dict[str, float]:
    from remark_data.adapters.trl import make_rank_reward_func
    from remark_data.rewards.parse import parse_entry, parse_line
    from remark_data.stages.ground.matching import lemma, lemma_key, normalize_title
    from remark_data.stages.ground.semantic import Embedder
    from remark_data.stages.ground.wordnet import WordNet, models_dir, partitions

    completions, columns = build_protoqa_step(seed=0)
    chain = [s for s in columns["match_steps"][0] if s != "semantic"]
    strings_only = {**columns, "match_steps": [chain] * len(completions)}
    start = time.perf_counter()
    WordNet(models_dir() / "wordnet")  # what WordNet.load() costs a fresh process
    wordnet_load = time.perf_counter() - start
    start = time.perf_counter()
    embedder = Embedder.load()
    model_load = time.perf_counter() - start

    def cold(columns: dict[str, list]) -> tuple[float, list[list[float]]]:
        nonlocal reward
        reward = make_rank_reward_func()
        for cache in (
            normalize_title,
            lemma,
            lemma_key,
            parse_line,
            parse_entry,
            WordNet.synsets,
            WordNet.phrase_senses,
            partitions,
        ):
            cache.cache_clear()
        embedder._vectors.clear()
        start = time.perf_counter()
        got = reward(None, completions, **columns)
        return time.perf_counter() - start, got

    reward = make_rank_reward_func()
    chain_times, warm_times, semantic_times, base_times = [], [], [], []
    for _ in range(steps):
        seconds, chained = cold(strings_only)
        chain_times.append(seconds)
        start = time.perf_counter()
        reward(None, completions, **strings_only)
        warm_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        exact = exact_baseline(completions, columns)
        base_times.append(time.perf_counter() - start)
    for _ in range(max(1, steps // 10)):
        seconds, semantic = cold(columns)
        semantic_times.append(seconds)
    plain, ours, warm, full = (
        statistics.median(x) * 1000 for x in (base_times, chain_times, warm_times, semantic_times)
    )
    paid = {
        name: sum(map(sum, r))
        for name, r in (("exact", exact), ("chain", chained), ("semantic", semantic))
    }
    print(f"ProtoQA rewards for one step: {REQUESTS} questions x G={GROUP} x {RANKS} answers "
          f"({len(completions)} lists of real answers), median of {steps}")  # fmt: skip
    print(f"  chain {'+'.join(chain)}, cold: {ours:7.2f} ms ({ours / plain:.1f}x the exact "
          f"baseline's time; {paid['chain']:.0f} ranks paid)")  # fmt: skip
    print(f"  the same chain, warm caches: {warm:7.2f} ms ({warm / plain:.1f}x)")
    print(f"  exact match baseline:       {plain:7.2f} ms ({paid['exact']:.0f} ranks paid)")
    print(f"  with the semantic step, batched, cold: {full:7.0f} ms "
          f"({paid['semantic']:.0f} ranks paid; model load {model_load:.1f} s apart)")  # fmt: skip
    print(f"  WordNet index load (once per process): {wordnet_load * 1000:.0f} ms")
    print("  target: < 20 ms per step cold without the semantic step")
    return {
        "protoqa_chain_cold_ms": round(ours, 2),
        "protoqa_chain_warm_ms": round(warm, 2),
        "protoqa_exact_ms": round(plain, 2),
        "protoqa_semantic_cold_ms": round(full, 1),
        "wordnet_load_ms": round(wordnet_load * 1000),
        "chain_vs_exact_time": round(ours / plain, 2),
    }


if __name__ == "__main__":
    main()
