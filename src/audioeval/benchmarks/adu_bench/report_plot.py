"""The ADU-Bench per-domain plot (the paper's Figure 2): one panel per dataset, one bar per domain and judge
with its 95% CI, each bar labelled with its mean. A domain with no score (nothing judged, or every judgment
failed) gets a hatched outline labelled "no score", so it never looks like a score of 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from audioeval.benchmarks.adu_bench.domains import DATASETS, domain_label

NO_SCORE_LABEL = "no score"
COLORS = ("#4C72B0", "#55A868", "#C44E52", "#8172B2", "#CCB974", "#64B5CD")


def _series(block: dict[str, Any], judges: list[str]) -> list[tuple[str | None, dict[str, Any]]]:
    """(judge, {domain: summary}) per bar series of one dataset panel."""
    if not judges:
        return [(None, block["domains"])]
    return [(j, {d: s["score"] for d, s in block["judges"][j]["domains"].items()}) for j in judges]


def domain_figure(summary: dict[str, Any], model: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    datasets = [d for d, b in summary["datasets"].items() if b["domains"]]
    judges = list(summary["judges"])
    fig, axes = plt.subplots(
        1, max(1, len(datasets)), figsize=(4.6 * max(1, len(datasets)), 4.4), squeeze=False
    )
    for ax, ds in zip(axes[0], datasets, strict=False):
        block = summary["datasets"][ds]
        names = list(block["domains"])
        series = _series(block, judges)
        width = 0.8 / len(series)
        x = np.arange(len(names))
        handles = []
        for s_index, (judge, domains) in enumerate(series):
            offsets = x - 0.4 + width * (s_index + 0.5)
            color = COLORS[s_index % len(COLORS)]
            for xpos, name in zip(offsets, names, strict=True):
                _bar(ax, xpos, width, domains.get(name), color)
            handles.append(Patch(color=color, label=judge))
        ax.set_xticks(x, [domain_label(n) for n in names], rotation=60, ha="right", fontsize=8)
        ax.set_ylim(0, 10.8)
        ax.set_title(DATASETS.get(ds, ds))
        ax.set_ylabel("judge score (0-10)")
        if judges:
            ax.legend(handles=handles, loc="upper right", fontsize=7)
    fig.suptitle(f"ADU-Bench per domain: {model}")
    fig.tight_layout()
    return fig


def _bar(ax: Any, xpos: float, width: float, s: dict[str, Any] | None, color: str) -> None:
    mean = (s or {}).get("mean")
    if s is None or mean is None:
        ax.bar(xpos, 10, width, fill=False, hatch="//", edgecolor="#BBBBBB", linewidth=0.5)
        ax.text(xpos, 5, NO_SCORE_LABEL, rotation=90, ha="center", va="center", fontsize=7, color="#777777")
        return
    lo, hi = s["ci95"]
    yerr = [[mean - (lo if lo is not None else mean)], [(hi if hi is not None else mean) - mean]]
    ax.bar(xpos, mean, width, yerr=yerr, capsize=2, color=color)
    ax.text(xpos, mean + yerr[1][0] + 0.1, f"{mean:.1f}", ha="center", va="bottom", fontsize=6)


def plot(summary: dict[str, Any], model: str, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig = domain_figure(summary, model)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
