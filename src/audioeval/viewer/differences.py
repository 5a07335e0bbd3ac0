"""The Compare page's paired differences: each run against the first, as `audioeval compare` computes them
(results/compare/), with McNemar's discordant pairs where scores are right/wrong, so the page can list the
episodes where the runs disagree. Made once, the first time the page asks."""

from __future__ import annotations

from typing import Any

from audioeval.errors import AudioEvalError
from audioeval.viewer.run_folder import RunFolder

RESAMPLES = 2_000  # the page answers within a second or two; `audioeval compare` draws 10,000


def paired_differences(runs: list[RunFolder]) -> dict[str, Any] | None:
    """Rows (task or group, k, main metric) with every other run's difference to the first; None with fewer
    than two runs."""
    if len(runs) < 2:
        return None
    from audioeval.config.registry import TaskRegistry
    from audioeval.results.compare.comparison import compare
    from audioeval.results.compare.pairing import plan
    from audioeval.results.compare.render import is_percent
    from audioeval.results.compare.runs import load_runs

    try:
        loaded = load_runs([str(run.path) for run in runs])
        try:
            planned = plan(loaded, 0, unpaired=False)
        except AudioEvalError as err:  # episodes differ: unpaired, saying why
            planned = plan(loaded, 0, unpaired=True)
            planned.notes.insert(0, str(err))
        registry = TaskRegistry.discover() if planned.pooled else None
        comparison = compare(loaded, 0, planned, registry, RESAMPLES, 0)
    except AudioEvalError as err:
        return {"baseline": 0, "paired": False, "notes": [str(err)], "rows": [], "resamples": 0}
    rows = [
        {
            "kind": row.kind,
            "name": row.name,
            "k": row.k,
            "setting": row.setting,
            "metric": row.metric,
            "lower_is_better": row.lower_is_better,
            "percent": is_percent(row),  # a proportion: its differences in percentage points, as the tables
            "differences": [None if d is None else _difference(d) for d in row.differences],
        }
        for row in comparison.rows
        if row.kind != "pooled"
    ]
    return {
        "baseline": 0,
        "paired": comparison.paired,
        "notes": comparison.notes,
        "rows": rows,
        "resamples": comparison.resamples,
    }


def _difference(d: Any) -> dict[str, Any]:
    return {
        "value": d.value,
        "ci95": list(d.ci95) if d.ci95 else None,
        "p_holm": d.p_holm,
        "test": d.test,
        "pairs": d.pairs,
        "failed_pairs": d.failed_pairs,
        "base_only": d.base_only,
        "other_only": d.other_only,
    }
