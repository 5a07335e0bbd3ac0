"""ADU-Bench's Table 2 for `audioeval compare --table paper`: one row per model, the mean judge score of each
of the four datasets (its tasks' results: the paper's weighted means of domain means) and their Average (the
group made of those tasks, the unweighted mean), on the judges' 0-10 scale with half the 95% CI."""

from __future__ import annotations

from audioeval.benchmarks.adu_bench.domains import DATASETS
from audioeval.config.registry import TaskRegistry
from audioeval.results.compare.paper import PaperColumn, PaperTable, register_paper_table
from audioeval.results.record import RunRecord
from audioeval.results.reports import benchmark_tasks

BENCHMARK = "adu_bench"
METRIC = "score"
NAMES = {"general": "General", "skill": "Skill", "multilingual": "Multilingual", "ambiguity": "Ambiguity"}


@register_paper_table(BENCHMARK)
def table_2(record: RunRecord, registry: TaskRegistry) -> list[PaperTable]:
    found = {str(info.get("dataset")): task for task, info in benchmark_tasks(record, BENCHMARK)}
    datasets = [d for d in DATASETS if d in found] + sorted(d for d in found if d not in DATASETS)
    if not datasets:
        return []
    key = next(iter(record.sections.results[found[datasets[0]]]))  # zero-shot: the one block
    columns = [
        PaperColumn("ADU-Bench", NAMES.get(d, d), "task", found[d], key, METRIC, digits=2) for d in datasets
    ]
    tasks = {found[d] for d in datasets}
    for name, per_k in record.sections.groups.items():
        block = per_k.get(key)
        if block is not None and set(block.subtasks or []) == tasks:
            columns.append(PaperColumn("", "Average", "group", name, key, METRIC, digits=2))
            break
    caption = (
        "ADU-Bench average evaluation scores (the layout of its Table 2): mean judge score (0--10) $\\pm$ half "
        "the 95\\% bootstrap CI; each dataset's mean weights its domains as the paper does, Average is the mean "
        "of the dataset means. Bold: best per column; $^\\dagger$: differs from the baseline (paired, "
        "Holm-adjusted $p<0.05$)."
    )
    return [PaperTable("ADU-Bench Table 2", caption, columns)]
