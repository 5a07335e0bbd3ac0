"""The table a run prints by default: one row per group, then per task, with its main metric (the first its
results list) at every k as `value [95% CI]`, and the samples scored. Failure rates (`*failure_rate`) get
a row of their own only where one is not zero, failed requests a note under the table. The full table (every
metric, stderr, errors) is summary.md in the run folder, and what `--full_table` prints."""

from __future__ import annotations

import math
from typing import Any

_NOT_METRICS = ("n", "errors")
_STATS_SUFFIXES = ("_stderr", "_ci95", "_missing")


def _metrics(block: dict[str, Any]) -> list[str]:
    return [
        m
        for m, v in block.items()
        if m not in _NOT_METRICS and not m.endswith(_STATS_SUFFIXES) and isinstance(v, int | float | None)
    ]


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _cell(block: dict[str, Any] | None, metric: str) -> str:
    if not block or metric not in block:
        return ""
    ci = block.get(f"{metric}_ci95") or []
    has_ci = len(ci) == 2 and all(isinstance(v, int | float) and not math.isnan(v) for v in ci)
    return _number(block[metric]) + (f" [{_number(ci[0])}, {_number(ci[1])}]" if has_ci else "")


def _scored(block: dict[str, Any], metric: str) -> int:
    return int(block.get("n", 0)) - int(block.get(f"{metric}_missing", 0))


def _shots(sections: list[dict[str, Any]]) -> list[str]:
    keys = {k for per_k in sections for k in per_k}
    return sorted(keys, key=lambda k: int(k.split("-")[0]) if k.split("-")[0].isdigit() else 10**9)


def compact_table(results: dict[str, Any], groups: dict[str, Any]) -> str:
    named = [(f"group: {g}", per_k) for g, per_k in groups.items()] + list(results.items())
    shots = _shots([per_k for _, per_k in named])
    header = ["task", "metric", *(f"k={k.split('-')[0]}" for k in shots), "n"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    failed: list[str] = []
    for name, per_k in named:
        blocks = list(per_k.values())
        metrics = next((_metrics(b) for b in blocks if _metrics(b)), [])
        main = [m for m in metrics if not m.endswith("failure_rate")][:1] or metrics[:1]
        failures = [
            m
            for m in metrics
            if m.endswith("failure_rate") and any(b.get(m) for b in blocks) and m not in main
        ]
        for metric in main + failures:
            counts = sorted({_scored(b, metric) for b in blocks if metric in b})
            n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}" if counts else "0"
            cells = [_cell(per_k.get(k), metric) for k in shots]
            lines.append("| " + " | ".join([name, metric, *cells, n]) + " |")
        if not main:
            lines.append("| " + " | ".join([name, "—", *("" for _ in shots), "0"]) + " |")
        errors = sum(int(b.get("errors", 0)) for b in blocks)
        if errors and not name.startswith("group: "):
            failed.append(f"{name}: {errors}")
    lines.append("")
    lines.append("each cell: value [95% CI] at k shots; n: samples scored per k")
    if failed:
        lines.append("failed requests (not scored): " + ", ".join(failed))
    return "\n".join(lines)
