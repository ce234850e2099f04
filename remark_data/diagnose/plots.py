"""Figures of responder noise, shared by `remark stats --plots DIR` and the notebook.

Each function takes plain polars frames (from the `labels` and `stats` tables or DuckDB views)
and returns a matplotlib Figure; `write_figures` saves them as PNG files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _figure(width: float = 7.0, height: float = 4.0) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def responders_histogram(labels: pl.DataFrame) -> Figure:
    """Responders per request (n_x), one panel per dataset, log-spaced bins."""
    import numpy as np

    datasets = sorted(labels["dataset"].unique())
    figure = _figure(3.2 * len(datasets), 3.2)
    axes = figure.subplots(1, len(datasets), squeeze=False)[0]
    for axis, dataset in zip(axes, datasets, strict=True):
        n_x = labels.filter(pl.col("dataset") == dataset)["n_responders"].to_numpy()
        bins = np.unique(np.logspace(0, np.log10(max(n_x.max(), 2)) + 0.01, 20).astype(int))
        axis.hist(n_x, bins=bins, color="#4C72B0")
        axis.set_xscale("log")
        axis.set_title(f"{dataset}\nmedian n_x = {np.median(n_x):.0f}", fontsize=9)
        axis.set_xlabel("responders per request (n_x)")
    axes[0].set_ylabel("requests")
    return figure


def p_hat_distribution(labels: pl.DataFrame) -> Figure:
    """p̂_i = c_i / n_x of every union item, per dataset (requests with n_x ≥ 2)."""
    items = (
        labels.filter(pl.col("n_responders") >= 2)
        .select(
            "dataset", pl.col("items").list.eval(pl.element().struct.field("p_hat")).alias("p_hat")
        )
        .explode("p_hat")
        .drop_nulls()
    )
    figure = _figure()
    axis = figure.subplots()
    for dataset in sorted(items["dataset"].unique()):
        values = items.filter(pl.col("dataset") == dataset)["p_hat"].to_numpy()
        axis.hist(
            values,
            bins=20,
            range=(0, 1),
            histtype="step",
            density=True,
            linewidth=1.5,
            label=dataset,
        )
    axis.set_yscale("log")
    axis.set_xlabel("p̂ = c_i / n_x (share of responders naming the item)")
    axis.set_ylabel("density (log)")
    axis.legend(fontsize=8)
    return figure


def label_noise_bars(stats: pl.DataFrame) -> Figure:
    """single_mention_share, union_to_sum and single_responder_share per dataset (all splits)."""
    pooled = (
        stats.sort("split")
        .group_by("dataset", maintain_order=True)
        .agg(pl.all().sort_by(pl.col("split") == "all", descending=True).first())
    )
    metrics = ["single_mention_share", "union_to_sum", "single_responder_share"]
    figure = _figure()
    axis = figure.subplots()
    width = 0.8 / len(metrics)
    names = pooled["dataset"].to_list()
    for index, metric in enumerate(metrics):
        positions = [i + index * width for i in range(len(names))]
        axis.bar(positions, pooled[metric].to_list(), width=width, label=metric)
    axis.set_xticks([i + width for i in range(len(names))], names, rotation=20, fontsize=8)
    axis.set_ylim(0, 1)
    axis.legend(fontsize=8)
    axis.set_title("How much responders disagree")
    return figure


def diagnostics_bars(diagnostics: pl.DataFrame) -> Figure:
    """Responder share of advantage variance and no-signal fractions, per dataset and policy."""
    figure = _figure()
    axis = figure.subplots()
    names = [
        f"{d}/{s}\n{p}" for d, s, p in diagnostics.select("dataset", "split", "policy").iter_rows()
    ]
    metrics = ["responder_share_scaled", "no_signal_cells_responder", "no_signal_cells_union"]
    width = 0.8 / len(metrics)
    for index, metric in enumerate(metrics):
        axis.bar(
            [i + index * width for i in range(len(names))],
            diagnostics[metric].to_list(),
            width=width,
            label=metric,
        )
    axis.set_xticks([i + width for i in range(len(names))], names, fontsize=7)
    axis.set_ylim(0, 1)
    axis.legend(fontsize=8)
    axis.set_title("Responder noise in the advantages, and what union rewards remove")
    return figure


def popularity_bars(diagnostics: pl.DataFrame) -> Figure | None:
    """Recall per item-popularity decile under union and responder rewards, one panel per
    (dataset, split, policy) that has deciles; None when none has (ProtoQA's clusters)."""
    if "recall_by_decile_union" not in diagnostics.columns:
        return None
    rows = diagnostics.filter(pl.col("recall_by_decile_union").list.len() > 0)
    if rows.is_empty():
        return None
    figure = _figure(height=3.0 * rows.height)
    for axis, row in zip(
        figure.subplots(rows.height, squeeze=False)[:, 0], rows.iter_rows(named=True), strict=True
    ):
        deciles = range(1, len(row["recall_by_decile_union"]) + 1)
        for offset, kind in ((-0.2, "union"), (0.2, "responder")):
            share = row[f"top_decile_reward_share_{kind}"]
            axis.bar([d + offset for d in deciles], row[f"recall_by_decile_{kind}"], width=0.4,
                     label=f"{kind} (top 10% of items earn {share:.0%} of the reward)")  # fmt: skip
        axis.set_title(f"{row['dataset']}/{row['split']} ({row['policy']})", fontsize=9)
        axis.set_xticks(list(deciles))
        axis.set_ylabel("recall", fontsize=8)
        axis.legend(fontsize=7)
    axis.set_xlabel("item popularity decile (1 = named by the most requests)", fontsize=8)
    return figure


def write_figures(
    directory: Path, *, labels: pl.DataFrame, stats: pl.DataFrame, diagnostics: pl.DataFrame | None
) -> list[Path]:
    """Save every figure as PNG into `directory`; returns the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    figures = {
        "responders_per_request.png": responders_histogram(labels),
        "p_hat_distribution.png": p_hat_distribution(labels),
        "label_noise.png": label_noise_bars(stats),
    }
    if diagnostics is not None and not diagnostics.is_empty():
        figures["diagnostics.png"] = diagnostics_bars(diagnostics)
        if (bias := popularity_bars(diagnostics)) is not None:
            figures["popularity_bias.png"] = bias
    paths = []
    for name, figure in figures.items():
        path = directory / name
        figure.savefig(path)
        paths.append(path)
    return paths
