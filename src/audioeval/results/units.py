"""One unit for scores wherever the harness shows them (terminal tables, summary.md, robustness tables and
plots, the viewer): a proportion — a score whose every value and CI bound lies between 0 and 1, such as
accuracy and the compliance and failure rates — in percent, as the benchmark reports and the papers show
it, its stderr and CI in percentage points; any other score (a 0–10 judge score, seconds) in its own unit.
results.json and the sample logs keep fractions."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from audioeval.results.blocks import ShotBlock

PERCENT_NOTE = "proportions (accuracy, rates) in %, their stderr and CI in percentage points"


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def is_proportion(values: Iterable[Any]) -> bool:
    """Whether a score is a proportion: every finite value given (means and CI bounds over its k) lies in
    [0, 1], and there is at least one."""
    finite = [float(v) for v in values if _finite(v)]
    return bool(finite) and all(0.0 <= v <= 1.0 for v in finite)


def score_values(blocks: Iterable[ShotBlock], metric: str) -> list[float | None]:
    """One metric's values and CI bounds over a task's (or group's) blocks: what `is_proportion` looks at."""
    out: list[float | None] = []
    for block in blocks:
        stats = block.get(metric)
        if stats is not None:
            out += [stats.value, *(stats.ci95 or ())]
    return out


def show(value: Any, proportion: bool, sign: bool = True) -> str:
    """A score as the tables show it: `12.3%` (or `12.3` inside a CI) for a proportion, `0.123` otherwise;
    "—" when missing."""
    if not _finite(value):
        return "—" if value is None or isinstance(value, float) else str(value)
    if proportion:
        return f"{100 * value:.1f}" + ("%" if sign else "")
    return f"{value:.3f}" if isinstance(value, float) else str(value)
