"""From per-sample scores to the `results` and `groups` sections of results.json."""

from __future__ import annotations

import math
from typing import Any

from audioeval.registry import TaskRegistry
from audioeval.score_rows import ScoreRow, score_arrays, score_names
from audioeval.scoring import TaskScorer
from audioeval.stats import MetricSummary, stable_seed, summarize, summarize_group


def _metric_block(summaries: dict[str, MetricSummary], n: int, errors: int) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for name, s in summaries.items():
        block[name] = s.value
        block[f"{name}_stderr"] = s.stderr  # NaN (null in results.json) when not measured
        block[f"{name}_ci95"] = s.ci95 if s.has_ci else None
        if s.missing:
            block[f"{name}_missing"] = s.missing
    block["n"] = n
    if errors:
        block["errors"] = errors
    return block


def aggregate_task(
    task_name: str, shots: list[int], rows: list[ScoreRow], scorer: TaskScorer, n_resamples: int, seed: int
) -> tuple[dict[str, Any], dict[int, dict[str, MetricSummary]]]:
    """results[task] and the summaries (with bootstrap draws) per k, for group aggregation."""
    per_k: dict[str, Any] = {}
    summaries_by_k: dict[int, dict[str, MetricSummary]] = {}
    names = score_names(rows)
    for k in shots:
        columns, selected = score_arrays(rows, k, names)
        errors = sum(r.error for r in selected)
        summaries = {}
        for name, agg in scorer.aggregations(list(columns)).items():
            if not all(i in columns for i in agg.inputs):
                continue
            summaries[name] = summarize(columns, agg, n_resamples, stable_seed(seed, task_name, k, name))
        summaries_by_k[k] = summaries
        per_k[f"{k}-shot"] = _metric_block(summaries, len(selected), errors)
    return per_k, summaries_by_k


def aggregate_groups(
    registry: TaskRegistry,
    group_names: list[str],
    task_summaries: dict[str, dict[int, dict[str, MetricSummary]]],
) -> dict[str, Any]:
    """Each group: per k, the unweighted mean of its evaluated leaf tasks' values, with a CI from resampling
    within each subtask. Leaves without a value for a metric are excluded and listed as `<metric>_unscored`."""
    groups: dict[str, Any] = {}
    for gname in group_names:
        group = registry.groups[gname]
        leaves = [t for t in registry.leaf_tasks(gname) if t in task_summaries]
        if not leaves:
            continue
        ks = sorted({k for t in leaves for k in task_summaries[t]})
        per_k: dict[str, Any] = {}
        for k in ks:
            members = [t for t in leaves if k in task_summaries[t]]
            common = set.intersection(*(set(task_summaries[t][k]) for t in members))
            names = [m for m in (group.aggregate_metrics or sorted(common)) if m in common]
            block: dict[str, Any] = {}
            for name in names:
                # leaves with no score for this metric (e.g. judged metrics without a judge) are left out of
                # the mean and named, rather than making the whole group null
                scored = [t for t in members if not math.isnan(task_summaries[t][k][name].value)]
                s = summarize_group([task_summaries[t][k][name] for t in scored]) if scored else None
                block[name] = s.value if s else math.nan
                block[f"{name}_stderr"] = s.stderr if s else math.nan
                block[f"{name}_ci95"] = s.ci95 if s and s.has_ci else None
                if len(scored) < len(members):
                    block[f"{name}_unscored"] = [t for t in members if t not in scored]
            block["n"] = sum(task_summaries[t][k][names[0]].n for t in members) if names else 0
            block["subtasks"] = members
            per_k[f"{k}-shot"] = block
        groups[gname] = per_k
    return groups
