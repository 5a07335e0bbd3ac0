"""From per-sample scores to the `results`, `groups` and `facets` sections of results.json."""

from __future__ import annotations

import fnmatch
import math
from typing import Any

import numpy as np

from audioeval.config.registry import TaskRegistry
from audioeval.results.blocks import FacetBlocks, MetricStats, PerK, ShotBlock
from audioeval.results.score_rows import ScoreRow, score_arrays, score_names
from audioeval.results.scoring import TaskScorer
from audioeval.results.stats import Aggregation, MetricSummary, summarize, summarize_group
from audioeval.seeds import stable_seed

Summaries = dict[str, MetricSummary]  # metric -> summary
#: facet -> value -> k -> metric summaries (of one task or group)
FacetSummaries = dict[str, dict[str, dict[int, Summaries]]]


def _metric_block(summaries: Summaries, n: int, errors: int) -> ShotBlock:
    metrics = {
        name: MetricStats.measured(s.value, s.stderr, s.ci95, s.missing) for name, s in summaries.items()
    }
    return ShotBlock(metrics, n, errors)


def _summaries(
    columns: dict[str, np.ndarray],
    aggregations: dict[str, Aggregation],
    n_resamples: int,
    seed_parts: tuple[Any, ...],
    keep_draws: bool = True,
) -> Summaries:
    """Every aggregation whose inputs were scored, seeded by (seed parts..., metric name); the bootstrap
    draws are kept (for group CIs) unless `keep_draws` is false."""
    return {
        name: summarize(columns, agg, n_resamples, stable_seed(*seed_parts, name), keep_draws)
        for name, agg in aggregations.items()
        if all(i in columns for i in agg.inputs)
    }


def aggregate_task(
    task_name: str, shots: list[int], rows: list[ScoreRow], scorer: TaskScorer, n_resamples: int, seed: int
) -> tuple[PerK, dict[int, Summaries]]:
    """results[task] and the summaries (with bootstrap draws) per k, for group aggregation."""
    per_k: PerK = {}
    summaries_by_k: dict[int, Summaries] = {}
    names = score_names(rows)
    for k in shots:
        columns, selected = score_arrays(rows, k, names)
        summaries = _summaries(columns, scorer.aggregations(list(columns)), n_resamples, (seed, task_name, k))
        summaries_by_k[k] = summaries
        per_k[f"{k}-shot"] = _metric_block(summaries, len(selected), sum(r.error for r in selected))
    return per_k, summaries_by_k


def aggregate_facets(
    task_name: str,
    shots: list[int],
    rows: list[ScoreRow],
    scorer: TaskScorer,
    facets: tuple[str, ...],
    n_resamples: int,
    seed: int,
    keep_draws: bool = True,
) -> tuple[FacetBlocks, FacetSummaries]:
    """facets[task]: per declared facet, per value (sorted), per k, every metric of the task aggregated as
    the task declares it (same rules, same bootstrap) over the samples with that value. Samples without a
    value for the facet are in no cell of it. The summaries keep their bootstrap draws only with
    `keep_draws` (a group averaging the task's facet values needs them; they cost memory per cell)."""
    out: FacetBlocks = {}
    kept: FacetSummaries = {}
    names = score_names(rows)
    for facet in facets:
        values = sorted({r.facets[facet] for r in rows if facet in r.facets})
        for value in values:
            for k in shots:
                columns, selected = score_arrays(rows, k, names)
                mask = np.array([r.facets.get(facet) == value for r in selected], dtype=bool)
                if not mask.any():
                    continue
                cell = {name: column[mask] for name, column in columns.items()}
                summaries = _summaries(
                    cell,
                    scorer.aggregations(list(cell)),
                    n_resamples,
                    (seed, task_name, k, facet, value),
                    keep_draws,
                )
                members = [r for r, m in zip(selected, mask, strict=True) if m]
                block = _metric_block(summaries, len(members), sum(r.error for r in members))
                out.setdefault(facet, {}).setdefault(value, {})[f"{k}-shot"] = block
                kept.setdefault(facet, {}).setdefault(value, {})[k] = summaries
    return out, kept


def needs_facet_draws(registry: TaskRegistry, group_names: list[str], task: str) -> bool:
    """Whether a group of the run averages this task's facet values (and so needs their bootstrap draws)."""
    return any(
        registry.groups[g].facet_aggregation == "mean_of_tasks" and task in registry.leaf_tasks(g)
        for g in group_names
    )


def _metric_names(wanted: list[str] | None, available: set[str]) -> list[str]:
    """The metrics a group averages: its `aggregate_metrics` (names or globs such as score@*, in the order
    given, globs' matches sorted), else every metric all members report."""
    if not wanted:
        return sorted(available)
    names: list[str] = []
    for pattern in wanted:
        for name in sorted(fnmatch.filter(available, pattern)) if "*" in pattern else [pattern]:
            if name in available and name not in names:
                names.append(name)
    return names


def _group_block(members: dict[str, Summaries], wanted: list[str] | None) -> ShotBlock:
    """The unweighted mean of the members' values per metric, with a CI from resampling within each member.
    Members with no value for a metric (e.g. judged metrics without a judge) are left out of that mean and
    named as `<metric>_unscored`, rather than making the whole group null."""
    common = set.intersection(*(set(s) for s in members.values()))
    names = _metric_names(wanted, common)
    metrics: dict[str, MetricStats] = {}
    for name in names:
        s, unscored = group_summary({t: summaries[name] for t, summaries in members.items()})
        if s is not None:
            metrics[name] = MetricStats.measured(s.value, s.stderr, s.ci95, unscored=unscored)
        else:
            metrics[name] = MetricStats(None, unscored=unscored)
    n = sum(s[names[0]].n for s in members.values()) if names else 0
    return ShotBlock(metrics, n, subtasks=list(members))


def group_summary(members: dict[str, MetricSummary]) -> tuple[MetricSummary | None, list[str]]:
    """A group's rule for one metric: the unweighted mean of the members' values (CI from the mean of their
    bootstrap draws), members without a value left out; None when no member has one. Also the members left
    out."""
    scored = [t for t, s in members.items() if not math.isnan(s.value)]
    unscored = [t for t in members if t not in scored]
    return (summarize_group([members[t] for t in scored]) if scored else None), unscored


def aggregate_groups(
    registry: TaskRegistry,
    group_names: list[str],
    task_summaries: dict[str, dict[int, Summaries]],
) -> dict[str, PerK]:
    """Each group: per k, the unweighted mean of its evaluated leaf tasks' values (see _group_block)."""
    groups: dict[str, PerK] = {}
    for gname in group_names:
        leaves = [t for t in registry.leaf_tasks(gname) if t in task_summaries]
        if not leaves:
            continue
        ks = sorted({k for t in leaves for k in task_summaries[t]})
        wanted = registry.groups[gname].aggregate_metrics
        groups[gname] = {
            f"{k}-shot": _group_block(
                {t: task_summaries[t][k] for t in leaves if k in task_summaries[t]}, wanted
            )
            for k in ks
        }
    return groups


def aggregate_group_facets(
    registry: TaskRegistry,
    group_names: list[str],
    facet_summaries: dict[str, FacetSummaries],
    rows: dict[str, list[ScoreRow]],
    n_resamples: int,
    seed: int,
) -> dict[str, FacetBlocks]:
    """facets[group]: per facet its leaves declare, per value, per k, as the group's `facet_aggregation`
    says: `mean_of_tasks`, the group rule (unweighted mean of the leaves' values for that facet value, CI
    from resampling within each leaf) over the leaves that have it; or `pooled_mean`, the plain mean of each
    of the group's metrics over all the leaves' samples with that value (one bootstrap over them)."""
    out: dict[str, FacetBlocks] = {}
    for gname in group_names:
        group = registry.groups[gname]
        leaves = [t for t in registry.leaf_tasks(gname) if facet_summaries.get(t)]
        facets: FacetBlocks = {}
        for facet in dict.fromkeys(f for t in leaves for f in facet_summaries[t]):  # as the tasks declare
            values = sorted({v for t in leaves for v in facet_summaries[t].get(facet, {})})
            for value in values:
                cells = {t: facet_summaries[t].get(facet, {}).get(value, {}) for t in leaves}
                for k in sorted({k for c in cells.values() for k in c}):
                    members = {t: c[k] for t, c in cells.items() if k in c}
                    if group.facet_aggregation == "pooled_mean":
                        block = _pooled_block(
                            {t: rows[t] for t in members}, k, facet, value, group.aggregate_metrics,
                            n_resamples, (seed, gname, k, facet, value),
                        )  # fmt: skip
                    else:
                        block = _group_block(members, group.aggregate_metrics)
                    facets.setdefault(facet, {}).setdefault(value, {})[f"{k}-shot"] = block
        if facets:
            out[gname] = facets
    return out


def _pooled_block(
    rows: dict[str, list[ScoreRow]],
    k: int,
    facet: str,
    value: str,
    wanted: list[str] | None,
    n_resamples: int,
    seed_parts: tuple[Any, ...],
) -> ShotBlock:
    """The plain mean of each metric over the samples (tasks in group order, episodes in order) with this
    facet value at this k; the metrics are the group's `aggregate_metrics`, else those every task reports."""
    selected = [
        r
        for task_rows in rows.values()
        for r in score_arrays(task_rows, k, [])[1]
        if r.facets.get(facet) == value
    ]
    common = set.intersection(*({n for r in task_rows for n in r.scores} for task_rows in rows.values()))
    names = _metric_names(wanted, common)
    columns, _ = score_arrays(selected, k, names)
    summaries = _summaries(columns, {n: Aggregation("mean", (n,)) for n in names}, n_resamples, seed_parts)
    block = _metric_block(summaries, len(selected), sum(r.error for r in selected))
    block.subtasks = list(rows)
    return block


def aggregate_pooled(
    registry: TaskRegistry,
    group_names: list[str],
    rows: dict[str, list[ScoreRow]],
    n_resamples: int,
    seed: int,
) -> dict[str, PerK]:
    """pooled[group][setting] for each group with a `pooled:` rule (config/pooled.py): per metric, the mean
    over the items (task, episode) of all its evaluated tasks, each item's value the mean of its scores at
    the setting's k, with a bootstrap CI over items. `n` counts the items run in the setting,
    `<metric>_missing` those without a value, `subtasks` the tasks run in it and `<metric>_unscored` those
    of them without any value. A setting no task ran in has no block."""
    out: dict[str, PerK] = {}
    for gname in group_names:
        rule = registry.groups[gname].pooled
        if rule is None:
            continue
        leaves = {t: rows[t] for t in registry.leaf_tasks(gname) if t in rows}
        names = _metric_names(
            list(rule.metrics), {n for task_rows in leaves.values() for n in score_names(task_rows)}
        )
        blocks = {}
        for setting, shots in rule.settings.items():
            chosen = {t: [r for r in task_rows if shots.holds(r.k)] for t, task_rows in leaves.items()}
            chosen = {t: task_rows for t, task_rows in chosen.items() if task_rows}
            if chosen:
                blocks[setting] = _items_block(chosen, names, n_resamples, (seed, gname, setting))
        if blocks:
            out[gname] = blocks
    return out


def pooled_items(
    rows: dict[str, list[ScoreRow]], names: list[str]
) -> tuple[list[tuple[str, int]], dict[str, np.ndarray]]:
    """The items (task, episode) of a pooled setting's rows, tasks in the order given and episodes in order,
    and per metric each item's value: the mean of its values over the rows (the setting's k), NaN without
    any."""
    items: list[tuple[str, int]] = []
    columns: dict[str, list[float]] = {name: [] for name in names}
    for task, task_rows in rows.items():
        by_item: dict[int, list[ScoreRow]] = {}
        for row in task_rows:
            by_item.setdefault(row.episode, []).append(row)
        for episode in sorted(by_item):
            items.append((task, episode))
            for name in names:
                values = [
                    v for r in by_item[episode] if (v := r.scores.get(name)) is not None and not math.isnan(v)
                ]
                columns[name].append(float(np.mean(values)) if values else math.nan)
    return items, {name: np.array(values, dtype=np.float64) for name, values in columns.items()}


def _items_block(
    rows: dict[str, list[ScoreRow]], names: list[str], n_resamples: int, seed_parts: tuple[Any, ...]
) -> ShotBlock:
    """One value per item and metric (see pooled_items), pooled over tasks."""
    items, arrays = pooled_items(rows, names)
    scored = {
        name: {t for (t, _), v in zip(items, arrays[name], strict=True) if not math.isnan(v)}
        for name in names
    }
    summaries = _summaries(
        arrays, {n: Aggregation("mean", (n,)) for n in names}, n_resamples, seed_parts, False
    )
    n_items = sum(len({r.episode for r in task_rows}) for task_rows in rows.values())
    block = _metric_block(summaries, n_items, sum(r.error for task_rows in rows.values() for r in task_rows))
    for name in names:
        block.metrics[name].unscored = [t for t in rows if t not in scored[name]]
    block.subtasks = list(rows)
    return block
