"""The table `audioeval compare` computes: per task x k (its main metric), per group x k (the group's rule: the
unweighted mean of its tasks' values) and per pooled setting, every run's value with its 95% CI as its
results.json reports it, and each run's difference to the baseline: paired (a paired bootstrap 95% CI over
clusters of episodes; exact McNemar for 0/1 scores, a sign-flip permutation test otherwise) or, where the
runs cannot be paired, unpaired (a normal approximation from the reported standard errors); p-values
Holm-corrected across the whole table."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from audioeval.config.registry import TaskRegistry
from audioeval.results.aggregate import group_summary, pooled_items
from audioeval.results.blocks import ShotBlock, shot_count
from audioeval.results.compact_table import main_metric
from audioeval.results.compare.cells import Cell, Scope, items_cell, resample, scope_of, task_cell
from audioeval.results.compare.pairing import Plan
from audioeval.results.compare.runs import Run
from audioeval.results.paired_stats import holm, normal_difference, permutation_pvalue
from audioeval.results.robustness import lower_is_better
from audioeval.results.scoring import aggregations
from audioeval.results.stats import NOT_MEASURED, MetricSummary, percentile_ci


@dataclass
class RunValue:
    """A run's number as its results.json reports it."""

    value: float | None
    ci95: tuple[float, float] | None
    n: int  # samples (items) with a value


@dataclass
class Difference:
    """A run minus the baseline."""

    value: float | None
    ci95: tuple[float, float] | None
    p: float | None
    p_holm: float | None
    test: str  # mcnemar | sign-flip | normal (unpaired)
    pairs: int | None  # samples (items) both runs logged; None unpaired
    failed_pairs: int | None  # of which either run gave no answer
    base_only: int | None = None  # 0/1 scores: pairs the baseline got right and this run wrong
    other_only: int | None = None  # and the reverse

    @property
    def significant(self) -> bool:
        return self.p_holm is not None and self.p_holm < 0.05


@dataclass(frozen=True)
class RowSpec:
    """What a row compares: a task's, group's or pooled setting's metric at one setting."""

    kind: str  # task | group | pooled
    name: str
    setting: str
    metric: str


@dataclass
class Row:
    kind: str  # task | group | pooled
    name: str
    setting: str  # `<k>-shot`, or a pooled setting's name
    metric: str
    lower_is_better: bool
    values: list[RunValue]  # per run, in the order given
    differences: list[Difference | None]  # per run; None for the baseline

    @property
    def k(self) -> int | None:
        return shot_count(self.setting)


@dataclass
class Comparison:
    labels: list[str]
    folders: list[str]
    baseline: int
    paired: bool
    resamples: int
    rows: list[Row]
    notes: list[str]

    def find(self, kind: str, name: str, setting: str, metric: str | None = None) -> Row | None:
        return next(
            (
                r
                for r in self.rows
                if (r.kind, r.name, r.setting) == (kind, name, setting) and metric in (None, r.metric)
            ),
            None,
        )

    def to_json(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, float):
                return None if math.isnan(value) else value
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [clean(v) for v in value]
            return value

        out = clean(asdict(self))
        out["baseline"] = self.labels[self.baseline]
        return out


def compare(
    runs: list[Run],
    baseline: int,
    plan: Plan,
    registry: TaskRegistry | None,
    n_resamples: int,
    seed: int,
    specs: list[RowSpec] | None = None,
) -> Comparison:
    """The rows `specs` asks for (by default every group, task and pooled setting's main metric), each run's
    value and its difference to the baseline, p-values Holm-corrected across these rows."""
    builder = _Builder(runs, baseline, plan, registry)
    rows = builder.rows(builder.default_specs() if specs is None else specs)
    if plan.paired:
        builder.prepare_cells(rows)
        resample(builder.all_cells(), n_resamples, seed)
        builder.fill_paired(rows)
    else:
        builder.fill_unpaired(rows)
    _holm(rows)
    return Comparison(
        [r.label for r in runs],
        [str(r.path) for r in runs],
        baseline,
        plan.paired,
        n_resamples if plan.paired else 0,
        rows,
        plan.notes,
    )


def _holm(rows: list[Row]) -> None:
    found = [d for row in rows for d in row.differences if d is not None]
    adjusted = holm([math.nan if d.p is None else d.p for d in found])
    for difference, p in zip(found, adjusted, strict=True):
        difference.p_holm = None if math.isnan(p) else p


def _value(block: ShotBlock | None, metric: str) -> RunValue:
    stats = block.get(metric) if block else None
    if block is None or stats is None:
        return RunValue(None, None, 0)
    return RunValue(stats.value, stats.ci95, block.scored(metric))


class _Builder:
    """Rows first (what is compared, every run's reported value), then the differences, paired or not."""

    def __init__(self, runs: list[Run], baseline: int, plan: Plan, registry: TaskRegistry | None) -> None:
        self.runs, self.baseline, self.plan, self.registry = runs, baseline, plan, registry
        self.base = runs[baseline].record
        self.scopes: dict[str, Scope] = {}
        self.cells: dict[tuple[Any, ...], list[Cell | None]] = {}  # (kind, name, setting, metric) -> per run

    def default_specs(self) -> list[RowSpec]:
        """Per group, then task, then pooled setting, the main metric at every setting all runs have."""
        sections = self.base.sections
        specs = []
        for group, keys in self.plan.groups.items():
            metric = main_metric(sections.groups[group])
            specs += [RowSpec("group", group, key, metric) for key in keys if metric]
        for task in self.plan.tasks:
            metric = main_metric(sections.results[task])
            specs += [RowSpec("task", task, key, metric) for key in self.plan.shots[task] if metric]
        for group, settings in self.plan.pooled.items():
            metric = sections.pooled[group][settings[0]].main_metric
            specs += [RowSpec("pooled", group, s, metric) for s in settings if metric]
        return specs

    def rows(self, specs: list[RowSpec]) -> list[Row]:
        """A row per spec that every run has (a spec the plan left out is skipped)."""
        rows = []
        for spec in dict.fromkeys(specs):
            if not self._in_plan(spec):
                continue
            values = [_value(self._block(i, spec), spec.metric) for i in range(len(self.runs))]
            tasks = self._members(spec) if spec.kind != "task" else [spec.name]
            rows.append(
                Row(
                    spec.kind,
                    spec.name,
                    spec.setting,
                    spec.metric,
                    self._lower(tasks, spec.metric),
                    values,
                    [],
                )
            )
        return rows

    def _in_plan(self, spec: RowSpec) -> bool:
        if spec.kind == "task":
            return spec.setting in self.plan.shots.get(spec.name, [])
        if spec.kind == "group":
            return spec.setting in self.plan.groups.get(spec.name, [])
        return spec.setting in self.plan.pooled.get(spec.name, [])

    def _lower(self, tasks: list[str], metric: str) -> bool:
        config = next((self.base.configs[t].config for t in tasks if t in self.base.configs), {})
        return lower_is_better(metric, config.get("higher_is_better") or {})

    # --- unpaired -------------------------------------------------------------------------------------
    def fill_unpaired(self, rows: list[Row]) -> None:
        for row in rows:
            base_block = self._block(self.baseline, row)
            for i in range(len(self.runs)):
                if i == self.baseline:
                    row.differences.append(None)
                    continue
                row.differences.append(_normal(base_block, self._block(i, row), row.metric))

    def _block(self, run: int, row: Row | RowSpec) -> ShotBlock | None:
        s = self.runs[run].record.sections
        section = {"task": s.results, "group": s.groups, "pooled": s.pooled}[row.kind]
        return section[row.name].get(row.setting)

    # --- paired ---------------------------------------------------------------------------------------
    def all_cells(self) -> list[Cell]:
        return [c for cells in self.cells.values() for c in cells if c is not None]

    def fill_paired(self, rows: list[Row]) -> None:
        for row in rows:
            if row.kind == "group":
                members = self._group_members(row)
                row.differences = [self._group_difference(members, i) for i in range(len(self.runs))]
            else:
                cells = self.cells.get((row.kind, row.name, row.setting, row.metric)) or []
                row.differences = [_paired(c) if c is not None else None for c in cells]

    def prepare_cells(self, rows: list[Row]) -> None:
        """Every cell the rows need, before the one resampling pass."""
        for row in rows:
            if row.kind == "task":
                self._task_cells(row.name, row.setting, row.metric)
            elif row.kind == "group":
                for task in self._members(row):
                    self._task_cells(task, row.setting, row.metric)
            else:
                self._pooled_cells(row)

    def _members(self, row: Row | RowSpec) -> list[str]:
        """The tasks of the run that a group or pooled block holds (its `subtasks`)."""
        block = self._block(self.baseline, row)
        return [t for t in (block.subtasks if block else None) or [] if t in self.plan.tasks]

    def _scope(self, task: str) -> Scope:
        if task not in self.scopes:
            logged = self._logged(self.baseline, task)
            episodes = [r.episode for r in logged.rows] if logged else []
            self.scopes[task] = scope_of(task, episodes, logged.clusters if logged else {})
        return self.scopes[task]

    def _logged(self, run: int, task: str) -> Any:
        logged = self.runs[run].logged
        return logged.get(task) if logged else None

    def _task_cells(self, task: str, setting: str, metric: str) -> list[Cell | None]:
        key = ("task", task, setting, metric)
        k = shot_count(setting)
        if key not in self.cells and k is not None:
            config = self.base.configs[task].config if task in self.base.configs else {}
            base = self._logged(self.baseline, task)
            names = list(dict.fromkeys(n for r in (base.rows if base else []) for n in r.scores))
            agg = aggregations(config.get("aggregation") or {}, names).get(metric)
            cells: list[Cell | None] = []
            for i in range(len(self.runs)):
                other = self._logged(i, task)
                if i == self.baseline or agg is None or base is None or other is None:
                    cells.append(None)
                else:
                    inputs = tuple(agg.inputs)
                    cells.append(task_cell(base.at(k, inputs), other.at(k, inputs), agg, self._scope(task)))
            self.cells[key] = cells
        return self.cells.get(key, [])

    def _pooled_cells(self, row: Row) -> None:
        rule = (
            self.registry.groups[row.name].pooled
            if self.registry and row.name in self.registry.groups
            else None
        )
        block = self.base.sections.pooled[row.name][row.setting]
        if rule is None or row.setting not in rule.settings:
            self.plan.notes.append(
                f"pooled {row.name} {row.setting}: its rule is not among the tasks found (--include_path), so it is not paired"
            )
            return
        setting = rule.settings[row.setting]
        tasks = [t for t in block.subtasks or [] if t in self.plan.tasks]
        per_run = []
        for i in range(len(self.runs)):
            chosen = {
                t: [r for r in self._logged(i, t).rows if setting.holds(r.k)]
                for t in tasks
                if self._logged(i, t)
            }
            per_run.append(chosen)
        base_items = pooled_items(per_run[self.baseline], [row.metric])
        cells: list[Cell | None] = []
        for i, chosen in enumerate(per_run):
            if i == self.baseline:
                cells.append(None)
                continue
            items = pooled_items(chosen, [row.metric])
            failed = {
                (t, r.episode)
                for run in (per_run[self.baseline], chosen)
                for t, rs in run.items()
                for r in rs
                if r.error
            }
            cells.append(
                items_cell(
                    (base_items[0], base_items[1][row.metric]),
                    (items[0], items[1][row.metric]),
                    failed,
                    {t: self._scope(t) for t in tasks},
                )
            )
        self.cells[("pooled", row.name, row.setting, row.metric)] = cells

    def _group_members(self, row: Row) -> list[list[Cell | None]]:
        return [self.cells.get(("task", t, row.setting, row.metric), []) for t in self._members(row)]

    def _group_difference(self, members: list[list[Cell | None]], run: int) -> Difference | None:
        """The group's rule (results/aggregate.py `group_summary`: the unweighted mean of its tasks' values) on
        both runs' paired values, on every bootstrap draw and on every permutation, over the tasks both runs
        scored."""
        if run == self.baseline:
            return None
        cells = [cell for m in members if m and (cell := m[run]) is not None]
        pairs, failed = sum(c.pairs for c in cells), sum(c.failed for c in cells)
        scored = [c for c in cells if c.combine is not None and not math.isnan(c.base_value + c.other_value)]
        if not scored:
            return Difference(None, None, None, None, "sign-flip", pairs, failed)
        permuted = [c.permuted() for c in scored]
        base = _group([(c.base_value, c.base_draws()) for c in scored])
        other = _group([(c.other_value, c.other_draws()) for c in scored])
        base_swapped = _group([(c.base_value, p[0]) for c, p in zip(scored, permuted, strict=True)])
        other_swapped = _group([(c.other_value, p[1]) for c, p in zip(scored, permuted, strict=True)])
        value = other.value - base.value
        low, high = percentile_ci(_dist(other) - _dist(base))
        p = permutation_pvalue(value, _dist(other_swapped) - _dist(base_swapped))
        ci = None if math.isnan(low) else (low, high)
        return Difference(value, ci, None if math.isnan(p) else p, None, "sign-flip", pairs, failed)


def _group(members: list[tuple[float, np.ndarray]]) -> MetricSummary:
    summary, _ = group_summary(
        {
            str(i): MetricSummary(value, math.nan, list(NOT_MEASURED), 0, 0, draws)
            for i, (value, draws) in enumerate(members)
        }
    )
    assert summary is not None  # every member has a value
    return summary


def _dist(summary: MetricSummary) -> np.ndarray:
    return summary.distribution if summary.distribution is not None else np.zeros(0)


def _paired(cell: Cell) -> Difference:
    if cell.combine is None:
        return Difference(None, None, None, None, "sign-flip", cell.pairs, cell.failed)
    low, high = cell.ci95()
    p = cell.p_value()
    mcnemar = cell.mcnemar
    return Difference(
        cell.difference,
        None if math.isnan(low) else (low, high),
        None if math.isnan(p) else p,
        None,
        "mcnemar" if mcnemar is not None else "sign-flip",
        cell.pairs,
        cell.failed,
        mcnemar.base_only if mcnemar else None,
        mcnemar.other_only if mcnemar else None,
    )


def _normal(base: ShotBlock | None, other: ShotBlock | None, metric: str) -> Difference | None:
    a = base.get(metric) if base else None
    b = other.get(metric) if other else None
    if a is None or b is None or a.value is None or b.value is None:
        return Difference(None, None, None, None, "normal", None, None)
    value, ci, p = normal_difference(a.value, _or_nan(a.stderr), b.value, _or_nan(b.stderr))
    return Difference(
        value,
        None if math.isnan(ci[0]) else (ci[0], ci[1]),
        None if math.isnan(p) else p,
        None,
        "normal",
        None,
        None,
    )


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
