"""Benchmark: rewards for one GRPO step (48 requests × G = 8 lists × 20 ranks).

Real Reddit-v2 labels (the 40 requests of the sample, cycled to 48) and the real 20-line
`completion` lists of the Reddit-v2 rows (8 per request, drawn from the 100). Ours: the TRL
per-rank reward function (`union`, `exp_inf`), parsing included. Baseline in the same run: a
straightforward per-item Python implementation (regex per line, a linear scan of the union for
each item, no caches). Both must produce identical rewards.

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
    from remark_data.rewards.parse import parse_line
    from remark_data.stages.ground.matching import normalize_title

    completions, columns = build_step(seed=0)
    expected = baseline_rewards(completions, columns)
    ours_cold, ours_warm, base = [], [], []
    for _ in range(args.steps):
        reward = make_rank_reward_func()  # fresh per-row cache
        normalize_title.cache_clear()
        parse_line.cache_clear()
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


if __name__ == "__main__":
    main()
