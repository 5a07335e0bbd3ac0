"""Score against the swept level, one panel per task, one line per k (95% CIs as error bars), the clean
score as a dashed line of the same colour. The x axis runs from mild to severe."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from audioeval.augment.catalogue import TRANSFORMS
from audioeval.results.units import is_proportion


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
        # a proportion in % on its whole scale, so drops are seen at their size (results/units.py)
        proportion = is_proportion(v for r in mine for v in [r["value"], *(r["ci95"] or [])])
        scale = 100.0 if proportion else 1.0
        for i, k in enumerate(dict.fromkeys(r["k"] for r in mine)):
            colour = f"C{i}"
            points = sorted(
                (r for r in mine if r["k"] == k and r["level"] is not None), key=lambda r: r["level"]
            )
            xs = [r["level"] for r in points]
            values = [_num(r["value"]) for r in points]
            bounds = [r["ci95"] or [v, v] for v, r in zip(values, points, strict=True)]
            ys = [scale * v for v in values]
            lo = [scale * (v - _num(b[0])) for v, b in zip(values, bounds, strict=True)]
            hi = [scale * (_num(b[1]) - v) for v, b in zip(values, bounds, strict=True)]
            ax.errorbar(xs, ys, yerr=[lo, hi], color=colour, marker="o", capsize=3, label=f"k={k}")
            clean = next((r for r in mine if r["k"] == k and r["condition"] == "clean"), None)
            if clean is not None:
                ax.axhline(scale * _num(clean["value"]), color=colour, linestyle="--", linewidth=1)
        if proportion:
            ax.set_ylim(-3, 103)
        if transform.harder == "lower":
            ax.invert_xaxis()
        ax.set_title(task, fontsize=9)
        ax.set_xlabel(f"{transform.name} ({transform.unit})" if transform.unit else transform.name)
        ax.set_ylabel(f"{metric}{' (%)' if proportion else ''} (dashed: clean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)
