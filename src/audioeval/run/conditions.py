"""The run's side of a robustness sweep: every task is evaluated clean and once per condition (as
`<task>@<condition>`), groups are aggregated per condition, and the robustness table and plot are written.
Benchmark reports see the clean tasks only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from audioeval.augment.episode import check_refusals
from audioeval.augment.plan import AugmentPlan
from audioeval.results.outputs import write_text
from audioeval.results.robustness import markdown, robustness_rows
from audioeval.results.robustness_plot import plot_sweep
from audioeval.run.prepared import PreparedTask


def with_conditions(tasks: list[PreparedTask], plan: AugmentPlan | None) -> list[PreparedTask]:
    """Each task clean, followed by one copy per condition."""
    if plan is None:
        return tasks
    out = []
    for task in tasks:
        check_refusals(task.builder, plan, f"task {task.name!r}")
        out.append(task)
        out.extend(dataclasses.replace(task, augment=condition) for condition in plan.conditions)
    return out


def clean_tasks(tasks: list[PreparedTask]) -> list[PreparedTask]:
    return [t for t in tasks if t.augment is None]


def condition_groups(
    plan: AugmentPlan | None, aggregate: Any, group_names: list[str], summaries: dict[str, Any]
) -> dict[str, Any]:
    """`<group>@<condition>` for every group, aggregated over the members' degraded copies
    (`aggregate(group_names, summaries)` is the run's own group aggregation)."""
    out: dict[str, Any] = {}
    for condition in plan.conditions if plan else ():
        suffix = condition.task_name("")
        own = {name[: -len(suffix)]: s for name, s in summaries.items() if name.endswith(suffix)}
        for group, per_k in aggregate(group_names, own).items():
            for block in per_k.values():
                block.subtasks = [condition.task_name(t) for t in block.subtasks or []]
            out[condition.task_name(group)] = per_k
    return out


def write_robustness(
    plan: AugmentPlan,
    tasks: list[PreparedTask],
    rows: dict[str, Any],
    results: dict[str, Any],
    n_resamples: int,
    seed: int,
    run_dir: Path | None,
    model: str,
) -> tuple[dict[str, Any], str, list[str]]:
    """(results.json's `robustness` section, the markdown table, the files written)."""
    table_rows = robustness_rows(tasks, rows, results, n_resamples, seed)
    table = markdown(table_rows)
    written: list[str] = []
    if run_dir is not None:
        write_text(
            run_dir / "robustness.md", f"# Robustness: {model}, --augment_target {plan.target}\n\n{table}\n"
        )
        written.append(str(run_dir / "robustness.md"))
        title = f"{model}: score vs {plan.swept}, target={plan.target}"
        figure = plot_sweep(table_rows, plan, run_dir / f"robustness_{plan.swept}.png", title)
        if figure is not None:
            written.append(str(figure))
    section = {**plan.record(), "rows": table_rows}
    return section, table, written
