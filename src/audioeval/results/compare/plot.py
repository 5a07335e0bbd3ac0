"""The multi-model shot-scaling plot of `audioeval compare --plot FILE`: one panel per group and task with more
than one k, each run's value at every k with its 95% CI as a band."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from audioeval.results.compare.comparison import Comparison, Row


def shot_scaling(comparison: Comparison, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels: dict[tuple[str, str, str], list[Row]] = {}
    for row in comparison.rows:
        if row.k is not None and row.kind in ("task", "group"):
            panels.setdefault((row.kind, row.name, row.metric), []).append(row)
    panels = {key: rows for key, rows in panels.items() if len(rows) > 1}
    n = max(1, len(panels))
    cols = min(3, n)
    lines = math.ceil(n / cols)
    fig = Figure(figsize=(3.6 * cols, 2.8 * lines + 0.9), dpi=100)
    FigureCanvasAgg(fig)
    colors = [f"C{i}" for i in range(10)]
    for index, ((kind, name, metric), rows) in enumerate(panels.items()):
        ax = fig.add_subplot(lines, cols, index + 1)
        rows = sorted(rows, key=lambda r: r.k or 0)
        ks = [r.k or 0 for r in rows]
        for run, label in enumerate(comparison.labels):
            points = [(k, r.values[run]) for k, r in zip(ks, rows, strict=True)]
            values = [(k, x) for k, v in points if (x := v.value) is not None]
            if not values:
                continue
            color = colors[run % len(colors)]
            ax.plot([k for k, _ in values], [x for _, x in values], marker="o", color=color, label=label)
            banded = [(k, v.ci95) for k, v in points if v.ci95 is not None]
            if banded:
                ax.fill_between(
                    [k for k, _ in banded], [c[0] for _, c in banded], [c[1] for _, c in banded],
                    color=color, alpha=0.18, linewidth=0,
                )  # fmt: skip
        ax.set_xticks(ks)
        ax.set_title(("group " if kind == "group" else "") + name, fontsize=10)
        ax.set_xlabel("shots k", fontsize=9)
        ax.set_ylabel(metric + (" ↓" if rows[0].lower_is_better else ""), fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
    if not panels:
        fig.text(0.5, 0.5, "no task or group was run at more than one k", ha="center", va="center")
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.suptitle("shot scaling (95% CI bands)", fontsize=12, y=0.995)
    if handles:
        fig.legend(list(handles.values()), list(handles), loc="upper center", ncol=min(4, len(handles)),
                   fontsize=9, frameon=False, bbox_to_anchor=(0.5, 1 - 0.35 / fig.get_figheight()))  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / fig.get_figheight()))
    fig.savefig(path)
    return path
