"""AudioICL-Bench's Table III for `audioeval compare --table paper`: one row per model, the nine tasks (A2 tasks,
then A3 tasks, by their paper abbreviations) and the A2/A3 averages, accuracy in % with half the 95% CI, one
table per k. The averages are the groups whose YAML metadata names an axis (their own rule: the unweighted
mean of the tasks' accuracies); the numbers are computed by the core."""

from __future__ import annotations

from audioeval.config.registry import TaskRegistry
from audioeval.results.blocks import by_shots, shot_key
from audioeval.results.compare.paper import PaperColumn, PaperTable, register_paper_table
from audioeval.results.record import RunRecord
from audioeval.results.reports import benchmark_tasks

BENCHMARK = "audioicl_bench"
METRIC = "accuracy"


@register_paper_table(BENCHMARK)
def table_iii(record: RunRecord, registry: TaskRegistry) -> list[PaperTable]:
    tasks = benchmark_tasks(record, BENCHMARK)
    axes = sorted({str(info["axis"]) for _, info in tasks})
    ordered = [(t, info) for axis in axes for t, info in tasks if str(info["axis"]) == axis]
    averages = {
        str((group.metadata or {}).get(BENCHMARK, {}).get("axis")): name
        for name, group in registry.groups.items()
        if (group.metadata or {}).get(BENCHMARK, {}).get("axis") and name in record.sections.groups
    }
    ks = sorted({k for t, _ in ordered for k in by_shots(record.sections.results[t])})
    tables = []
    for k in ks:
        key = shot_key(k)
        columns = [
            PaperColumn(f"{info['axis']} tasks", str(info["short"]), "task", task, key, METRIC, percent=True)
            for task, info in ordered
        ]
        columns += [
            PaperColumn("averages", axis, "group", averages[axis], key, METRIC, percent=True)
            for axis in axes
            if axis in averages
        ]
        caption = (
            f"AudioICL-Bench cross-model comparison at $k={k}$ (the layout of its Table III): accuracy (\\%) $\\pm$ "
            "half the 95\\% bootstrap CI; "
            + ", ".join(f"{a} the mean over the {a} tasks" for a in averages)
            + ". Bold: best per column; $^\\dagger$: differs from the baseline (paired, Holm-adjusted $p<0.05$)."
        )
        tables.append(PaperTable(f"AudioICL-Bench Table III, k={k}", caption, columns))
    return tables
