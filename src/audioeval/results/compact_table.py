"""The table a run prints by default: one row per group, then per task, with its main metric (the first its
results list) at every k as `value [95% CI]`, and the samples scored; proportions in % (results/units.py).
Failure rates (`*failure_rate`) get a row of their own only where one is not zero, failed requests a note
under the table. The full table (every metric, stderr, errors) is summary.md in the run folder, and what
`--full_table` prints."""

from __future__ import annotations

from audioeval.results.blocks import MetricStats, PerK, ShotBlock, shot_count
from audioeval.results.units import PERCENT_NOTE, is_proportion, score_values, show


def _cell(block: ShotBlock | None, metric: str, proportion: bool) -> str:
    stats: MetricStats | None = block.get(metric) if block else None
    if stats is None:
        return ""
    ci = stats.ci95
    bounds = (
        f" [{show(ci[0], proportion, False)}, {show(ci[1], proportion, False)}]" if ci is not None else ""
    )
    return show(stats.value, proportion) + bounds


def _shots(sections: list[PerK]) -> list[str]:
    keys = {k for per_k in sections for k in per_k}
    return sorted(keys, key=lambda k: c if (c := shot_count(k)) is not None else 10**9)


def main_metric(per_k: PerK) -> str | None:
    """The metric a table shows for a task or group: that of its first block with any metric."""
    return next((b.main_metric for b in per_k.values() if b.metrics), None)


def compact_table(results: dict[str, PerK], groups: dict[str, PerK]) -> str:
    named = [(f"group: {g}", per_k) for g, per_k in groups.items()] + list(results.items())
    shots = _shots([per_k for _, per_k in named])
    header = ["task", "metric", *(f"k={k.split('-')[0]}" for k in shots), "n"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    failed: list[str] = []
    for name, per_k in named:
        blocks = list(per_k.values())
        main = main_metric(per_k)
        metrics = next((list(b.metrics) for b in blocks if b.metrics), [])
        failures = [
            m for m in metrics if m.endswith("failure_rate") and m != main and any(b.value(m) for b in blocks)
        ]
        for metric in ([main] if main else []) + failures:
            counts = sorted({b.scored(metric) for b in blocks if metric in b.metrics})
            n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}" if counts else "0"
            proportion = is_proportion(score_values(blocks, metric))
            cells = [_cell(per_k.get(k), metric, proportion) for k in shots]
            lines.append("| " + " | ".join([name, metric, *cells, n]) + " |")
        if not main:
            lines.append("| " + " | ".join([name, "—", *("" for _ in shots), "0"]) + " |")
        errors = sum(b.errors for b in blocks)
        if errors and not name.startswith("group: "):
            failed.append(f"{name}: {errors}")
    lines.append("")
    lines.append(f"each cell: value [95% CI] at k shots ({PERCENT_NOTE}); n: samples scored per k")
    if failed:
        lines.append("failed requests (not scored): " + ", ".join(failed))
    return "\n".join(lines)
