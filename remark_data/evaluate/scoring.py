"""Precision and recall of a run's labels against gold, with bootstrap intervals over threads.

Pure: frames in, a frame out. Levels: `label` (the union of each request), `comment` (the items
each gold comment yields) and `mention` (the titles found in each gold comment, by surface).
Micro-averaged over (request, key) pairs; the 95% interval resamples requests (threads), since
comments of one thread are not independent.
"""

from __future__ import annotations

import numpy as np
import polars as pl

Z_LEVEL = 0.95


def _counts(ours: pl.DataFrame, gold: pl.DataFrame, *, by: list[str]) -> pl.DataFrame:
    """Per request: tp, fp, fn of the `key` sets grouped by `by` (which includes request_id)."""
    hits = ours.join(gold, on=[*by, "key"], how="semi")
    grouped = [
        frame.group_by("request_id").agg(pl.len().alias(name))
        for frame, name in ((ours, "predicted"), (gold, "gold"), (hits, "tp"))
    ]
    # Requests of either side: a wrong item in a request with nothing to find still counts.
    out = pl.concat([ours.select("request_id"), gold.select("request_id")]).unique()
    for frame in grouped:
        out = out.join(frame, on="request_id", how="left")
    return out.fill_null(0).with_columns(
        (pl.col("predicted") - pl.col("tp")).alias("fp"),
        (pl.col("gold") - pl.col("tp")).alias("fn"),
    )


def _interval(tp: np.ndarray, other: np.ndarray, *, draws: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(tp), size=(draws, len(tp)))
    num = tp[picks].sum(axis=1)
    den = num + other[picks].sum(axis=1)
    ratio = np.divide(num, den, out=np.zeros(draws), where=den > 0)
    low, high = np.quantile(ratio, [(1 - Z_LEVEL) / 2, 1 - (1 - Z_LEVEL) / 2])
    return float(low), float(high)


def score(
    ours: pl.DataFrame,
    gold: pl.DataFrame,
    *,
    level: str,
    by: list[str],
    draws: int = 1000,
    seed: int = 0,
) -> dict[str, object]:
    """One row of the report: `ours` and `gold` have `by` columns and a `key` column."""
    counts = _counts(ours.unique(), gold.unique(), by=by)
    tp, fp, fn = (counts[c].to_numpy() for c in ("tp", "fp", "fn"))
    precision = tp.sum() / max(tp.sum() + fp.sum(), 1)
    recall = tp.sum() / max(tp.sum() + fn.sum(), 1)
    p_low, p_high = _interval(tp, fp, draws=draws, seed=seed)
    r_low, r_high = _interval(tp, fn, draws=draws, seed=seed + 1)
    return {
        "level": level,
        "threads": counts.height,
        "tp": int(tp.sum()),
        "fp": int(fp.sum()),
        "fn": int(fn.sum()),
        "precision": float(precision),
        "precision_low": p_low,
        "precision_high": p_high,
        "recall": float(recall),
        "recall_low": r_low,
        "recall_high": r_high,
    }
