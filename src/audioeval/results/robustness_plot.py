"""Score against the swept level, one panel per task, one line per k (95% CIs as error bars), the clean
score as a dashed line of the same colour. The x axis runs from mild to severe."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from audioeval.augment.catalogue import TRANSFORMS


def primary_metric(rows: list[dict[str, Any]], task: str) -> str | None:
    """The task's first reported metric that is not a harness rate (parse/judge failures...)."""
    metrics = list(dict.fromkeys(r["metric"] for r in rows if r["task"] == task))
    preferred = [m for m in metrics if not m.endswith("_rate")]
    return (preferred or metrics or [None])[0]


def plot_sweep(rows: list[dict[str, Any]], plan: Any, path: Path, title: str) -> Path | None:
    """Writes the figure when the conditions differ in one level (a sweep); returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    if not tasks or plan.swept is None:
        return None
    transform = TRANSFORMS[plan.swept]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        metric = primary_metric(rows, task)
        mine = [r for r in rows if r["task"] == task and r["metric"] == metric]
        for i, k in enumerate(dict.fromkeys(r["k"] for r in mine)):
            colour = f"C{i}"
            points = sorted(
                (r for r in mine if r["k"] == k and r["level"] is not None), key=lambda r: r["level"]
            )
            xs = [r["level"] for r in points]
            ys = [_num(r["value"]) for r in points]
            lo = [y - _num((r["ci95"] or [y, y])[0]) for y, r in zip(ys, points, strict=True)]
            hi = [_num((r["ci95"] or [y, y])[1]) - y for y, r in zip(ys, points, strict=True)]
            ax.errorbar(xs, ys, yerr=[lo, hi], color=colour, marker="o", capsize=3, label=f"k={k}")
            clean = next((r for r in mine if r["k"] == k and r["condition"] == "clean"), None)
            if clean is not None:
                ax.axhline(_num(clean["value"]), color=colour, linestyle="--", linewidth=1)
        values = [_num(r["value"]) for r in mine]
        if values and all(0.0 <= v <= 1.0 for v in values if not math.isnan(v)):
            ax.set_ylim(-0.03, 1.03)  # proportions: the whole scale, so drops are seen at their size
        if transform.harder == "lower":
            ax.invert_xaxis()
        ax.set_title(task, fontsize=9)
        ax.set_xlabel(f"{transform.name} ({transform.unit})" if transform.unit else transform.name)
        ax.set_ylabel(f"{metric} (dashed: clean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)
