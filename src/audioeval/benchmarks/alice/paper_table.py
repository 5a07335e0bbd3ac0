"""ALICE's tables for `audioeval compare --table paper`, one row per model:

- Table 2: format compliance rate (FCR, %, strict) per task group, shot setting and stage, $\\pm$ half the 95%
  CI, from the `pooled` blocks of the stage groups (tasks/alice/alice_stage*.yaml), exactly the report's cells;
- task performance per constraint category: per stage and task, the FCR (%) and the task metric (ASR: corpus
  WER, lower is better; SER/GR/MMAU: accuracy, %) at one-shot and at the largest k every stage ran."""

from __future__ import annotations

from audioeval.benchmarks.alice.report import CATEGORY_NAMES, GROUP_A, TABLE2_COLUMNS, TASK_NAMES
from audioeval.config.registry import TaskRegistry
from audioeval.results.blocks import by_shots, shot_key
from audioeval.results.compare.paper import PaperColumn, PaperTable, register_paper_table
from audioeval.results.record import RunRecord
from audioeval.results.reports import benchmark_tasks

FCR = "format_strict"
_MARKS = "Bold: best per column; $^\\dagger$: differs from the baseline (paired, Holm-adjusted $p<0.05$)."


@register_paper_table("alice")
def alice_tables(record: RunRecord, registry: TaskRegistry) -> list[PaperTable]:
    return [t for t in (_table_2(record, registry), *_performance(record)) if t is not None]


def _table_2(record: RunRecord, registry: TaskRegistry) -> PaperTable | None:
    stage_groups = {}
    for name in record.sections.pooled:
        info = (registry.groups[name].metadata or {}).get("alice") if name in registry.groups else None
        if isinstance(info, dict) and "task_group" in info:
            stage_groups[(str(info["task_group"]), int(info["stage"]))] = name
    columns = [
        PaperColumn(
            f"Task Group {group}: {setting}",
            f"Stage {stage}",
            "pooled",
            stage_groups[(group, stage)],
            setting,
            FCR,
            percent=True,
            digits=2,
        )  # fmt: skip
        for group, setting, stages in TABLE2_COLUMNS
        for stage in stages
        if (group, stage) in stage_groups and setting in record.sections.pooled[stage_groups[(group, stage)]]
    ]
    if not columns:
        return None
    caption = (
        "ALICE format compliance rate (FCR, \\%, strict) $\\pm$ half the 95\\% bootstrap CI over items (the "
        "layout of its Table 2); few-shot is each item's mean over $k \\geq 1$. " + _MARKS
    )
    return PaperTable("ALICE Table 2 (FCR)", caption, columns)


def _performance(record: RunRecord) -> list[PaperTable]:
    index = {(i["task"], i["category"], int(i["stage"])): n for n, i in benchmark_tasks(record, "alice")}
    tables = []
    for category in CATEGORY_NAMES:
        tasks = {key: name for key, name in index.items() if key[1] == category}
        ks = [set(by_shots(record.sections.results[n])) - {0} for n in tasks.values()]
        common = set.intersection(*ks) if ks else set()
        for k in sorted({min(common), max(common)}) if common else []:
            columns = []
            for stage in (1, 2, 3):
                for task in GROUP_A:
                    name = tasks.get((task, category, stage))
                    if name is None:
                        continue
                    metric, label, percent = (
                        ("wer", "WER ↓", False) if task == "asr" else ("accuracy", "acc", True)
                    )
                    group = f"Stage {stage}"
                    columns.append(
                        PaperColumn(group, f"{TASK_NAMES[task]} FCR", "task", name, shot_key(k), FCR, True)
                    )
                    columns.append(
                        PaperColumn(
                            group,
                            f"{TASK_NAMES[task]} {label}",
                            "task",
                            name,
                            shot_key(k),
                            metric,
                            percent,
                            3 if not percent else 1,
                        )
                    )
            caption = (
                f"ALICE per task, {CATEGORY_NAMES[category]} items, $k={k}$: format compliance (FCR, \\%) and the "
                "task metric (ASR: corpus WER, lower is better; SER/GR/MMAU: accuracy, \\%) $\\pm$ half the 95\\% "
                "bootstrap CI. " + _MARKS
            )
            tables.append(
                PaperTable(f"ALICE {CATEGORY_NAMES[category]} task performance, k={k}", caption, columns)
            )
    return tables
