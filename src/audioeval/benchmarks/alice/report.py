"""ALICE's report: the format-compliance table shaped like the paper's Table 2 and the task-performance-vs-k
figures shaped like its Figures 2 (CEQ) and 3 (CoT).

Table 2: format compliance rate (FCR, %, strict) per stage and shot setting — zero-shot (k=0, stage 1 only),
one-shot (k=1) and few-shot (per item, the mean over every evaluated k >= 1) — for Task Group A
(ASR/SER/GR/MMAU, stages 1-2) and Task Group B (ASR/SER/GR, stages 1-3). Items of both constraint
categories are pooled, as in the paper (CoT items count when the judge gave a verdict; each cell says which
categories it holds, and tasks that ran without any score are named). The ± value is half the width of a
95% percentile bootstrap interval over items. Every number comes from results.json: the cells are the core's
`pooled` blocks of the groups tasks/alice/alice_stage*.yaml declare (their metadata names the task group and
stage); the performance table and figures read the per-task `results`.

Files written to the run folder: alice_report.md, alice_fcr.json, alice_task_performance_ceq.png,
alice_task_performance_cot.png.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from audioeval.results.blocks import PerK, by_shots
from audioeval.results.record import RunRecord
from audioeval.results.reports import ReportContext, benchmark_tasks, register

GROUP_A = ("asr", "ser", "gr", "mmau")
GROUP_B = ("asr", "ser", "gr")
SHOT_SETTINGS = ("zero-shot", "one-shot", "few-shot")
TASK_NAMES = {"asr": "ASR", "ser": "SER", "gr": "GR", "mmau": "MMAU"}
CATEGORY_NAMES = {"ceq": "CEQ", "cot": "CoT"}
# (group, shot setting, stages) in the column order of the paper's Table 2
TABLE2_COLUMNS = [
    ("A", "zero-shot", (1,)),
    ("A", "one-shot", (1, 2)),
    ("A", "few-shot", (1, 2)),
    ("B", "zero-shot", (1,)),
    ("B", "one-shot", (1, 2, 3)),
    ("B", "few-shot", (1, 2, 3)),
]


def _alice_tasks(ctx: ReportContext) -> list[tuple[str, dict[str, Any]]]:
    """(task, its YAML metadata.alice: stage, task, category) for the ALICE tasks of the run."""
    return [(name, info) for name, info in benchmark_tasks(ctx.record, "alice") if name in ctx.rows]


def _pooled(ctx: ReportContext) -> dict[tuple[str, int], PerK]:
    """(task group, stage) -> its Table 2 blocks per shot setting: results.json `pooled` of the groups whose
    YAML metadata says which task group and stage they are (tasks/alice/alice_stage*.yaml)."""
    found = {}
    for name, blocks in ctx.record.sections.pooled.items():
        info = (
            (ctx.registry.groups[name].metadata or {}).get("alice") if name in ctx.registry.groups else None
        )
        if isinstance(info, dict) and "task_group" in info:
            found[(str(info["task_group"]), int(info["stage"]))] = blocks
    return found


def fcr_cells(ctx: ReportContext, metric: str = "format_strict") -> list[dict[str, Any]]:
    """Table 2's cells, in column order, from the core's pooled blocks."""
    category = {name: info.get("category") for name, info in _alice_tasks(ctx)}
    pooled = _pooled(ctx)
    cells = []
    for group, setting, stages in TABLE2_COLUMNS:
        for stage in stages:
            block = pooled.get((group, stage), {}).get(setting)
            stats = block.get(metric) if block else None
            unscored = list(stats.unscored) if stats else []
            included = [t for t in (block.subtasks if block else None) or [] if t not in unscored]
            value = stats.value if stats else None
            cells.append(
                {
                    "group": group,
                    "setting": setting,
                    "stage": stage,
                    "tasks": included,
                    "categories": [
                        CATEGORY_NAMES[c] for c in CATEGORY_NAMES if c in {category.get(t) for t in included}
                    ],
                    "unscored_tasks": unscored,
                    "value": value,
                    "ci95": list(stats.ci95) if stats and stats.ci95 else [None, None],
                    "n": block.scored(metric) if block and value is not None else 0,
                }
            )
    return cells


def _pct(cell: dict[str, Any]) -> str:
    if cell["value"] is None:
        return "—"
    lo, hi = cell["ci95"]
    if lo is None or hi is None:  # one item or no bootstrap: no interval was measured
        return f"{cell['value'] * 100:.2f}"
    return f"{cell['value'] * 100:.2f} ± {(hi - lo) / 2 * 100:.2f}"


def table2_markdown(cells: list[dict[str, Any]], model: str) -> str:
    head = ["model"]
    for group, setting, stages in TABLE2_COLUMNS:
        head += [f"{group}: {setting} S{s}" for s in stages]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.append("| " + " | ".join([model] + [_pct(c) for c in cells]) + " |")
    lines.append("| n (items) | " + " | ".join(str(c["n"]) for c in cells) + " |")
    lines.append("| items scored | " + " | ".join("+".join(c["categories"]) or "—" for c in cells) + " |")
    return "\n".join(lines)


def table2_notes(cells: list[dict[str, Any]]) -> str:
    """What the table's cells hold: which constraint categories were pooled, and which tasks that ran have no
    scores in it (chain-of-thought tasks without judge verdicts)."""
    pooled = {tuple(c["categories"]) for c in cells if c["categories"]}
    if pooled == {("CEQ", "CoT")}:
        text = "CEQ and CoT items are pooled."
    else:
        text = "Each cell pools the items of the categories in its `items scored` row."
    unscored = sorted({t for c in cells for t in c["unscored_tasks"]})
    if unscored:
        text += " Not in the table (run, but no item has a score): " + ", ".join(unscored) + "."
    return text


def _model_label(record: RunRecord) -> str:
    args = record.model.model_args
    detail = args.get("pretrained") or args.get("model")
    return record.model.name + (f" ({detail})" if detail else "")


def _task_metric(task: str) -> tuple[str, str]:
    return ("wer", "WER (%) ↓") if task == "asr" else ("accuracy", "accuracy (%) ↑")


def _per_k(
    ctx: ReportContext, name: str, metric: str
) -> tuple[list[int], list[float], list[float], list[float]]:
    ks, values, lows, highs = [], [], [], []
    for k, block in by_shots(ctx.record.sections.results.get(name) or {}).items():
        stats = block.get(metric)
        if stats is None or stats.value is None:
            continue
        low, high = stats.ci95 or (stats.value, stats.value)
        ks.append(k)
        values.append(stats.value)
        lows.append(low)
        highs.append(high)
    order = np.argsort(ks)
    return (
        [ks[i] for i in order],
        [values[i] for i in order],
        [lows[i] for i in order],
        [highs[i] for i in order],
    )


def performance_markdown(ctx: ReportContext) -> str:
    lines = [
        "| task | category | metric | S1 zero-shot | S1 one-shot | S1 few-shot | S2 one-shot | S2 few-shot | "
        "S3 one-shot | S3 few-shot |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    index = {(i["task"], i["category"], i["stage"]): n for n, i in _alice_tasks(ctx)}
    for task in GROUP_A:
        for category in ("ceq", "cot"):
            metric, label = _task_metric(task)
            cells = []
            present = False
            for stage, settings in ((1, ("zero", "one", "few")), (2, ("one", "few")), (3, ("one", "few"))):
                name = index.get((task, category, stage))
                ks, values, _, _ = _per_k(ctx, name, metric) if name else ([], [], [], [])
                by_k = dict(zip(ks, values, strict=True))
                for setting in settings:
                    if setting == "zero":
                        v = by_k.get(0)
                    elif setting == "one":
                        v = by_k.get(1)
                    else:
                        shots = [x for k, x in by_k.items() if k >= 1]
                        v = float(np.mean(shots)) if shots else None
                    present |= v is not None
                    cells.append("—" if v is None else f"{v:.4f}")
            if present or any(index.get((task, category, s)) for s in (1, 2, 3)):
                lines.append(
                    f"| {TASK_NAMES[task]} | {CATEGORY_NAMES[category]} | {label} | "
                    + " | ".join(cells)
                    + " |"
                )
    return "\n".join(lines)


def plot_performance(ctx: ReportContext, category: str, path: Path) -> Path | None:
    from matplotlib.figure import Figure

    index = {(i["task"], i["stage"]): n for n, i in _alice_tasks(ctx) if i["category"] == category}
    tasks = [t for t in GROUP_A if any((t, s) in index for s in (1, 2, 3))]
    if not tasks:
        return None
    fig = Figure(figsize=(10.5, 2.6 * len(tasks) + 0.6))
    axes = fig.subplots(len(tasks), 3, squeeze=False)
    letters = "abcd"
    for r, task in enumerate(tasks):
        metric, label = _task_metric(task)
        for c, stage in enumerate((1, 2, 3)):
            ax = axes[r][c]
            ax.set_title(f"({letters[r]}{stage}) {TASK_NAMES[task]} — Stage {stage}", fontsize=9)
            name = index.get((task, stage))
            if name is None:
                reason = (
                    "not applicable (needs the question text)" if task == "mmau" and stage == 3 else "not run"
                )
                ax.text(0.5, 0.5, reason, ha="center", va="center", transform=ax.transAxes, fontsize=8)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            ks, values, lows, highs = _per_k(ctx, name, metric)
            if not ks:
                ax.text(
                    0.5,
                    0.5,
                    "no scores (judge needed?)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    fontsize=8,
                )
                continue
            percent = [[100 * v for v in series] for series in (values, lows, highs)]  # as the tables show it
            ax.plot(ks, percent[0], marker="o", linewidth=1.4, label=_model_label(ctx.record))
            ax.fill_between(ks, percent[1], percent[2], alpha=0.2)
            ax.set_xticks(ks)
            ax.set_xlabel("k (in-context examples)", fontsize=8)
            ax.set_ylabel(label, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    title = "closed-ended questions (CEQ)" if category == "ceq" else "chain-of-thought (CoT)"
    fig.suptitle(f"ALICE task performance vs k, {title} — {_model_label(ctx.record)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _group_table(ctx: ReportContext) -> str:
    from audioeval.benchmarks.alice.constraints import CEQ_GROUPS

    lines = ["| stage | " + " | ".join(CEQ_GROUPS) + " |", "|---|" + "---|" * len(CEQ_GROUPS)]
    few_shot = [
        (stage, blocks["few-shot"]) for (_, stage), blocks in _pooled(ctx).items() if "few-shot" in blocks
    ]
    for stage in (1, 2, 3):
        # the stage's widest group holds all its CEQ items
        blocks = [b for s, b in few_shot if s == stage]
        block = max(blocks, key=lambda b: len(b.subtasks or []), default=None)
        cells = []
        for group in CEQ_GROUPS:
            value = block.value(f"format_strict_{group}") if block else None
            scored = block.scored(f"format_strict_{group}") if block else 0
            cells.append(f"{value * 100:.2f} (n={scored})" if scored and value is not None else "—")
        if any(c != "—" for c in cells):
            lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _judge_section(ctx: ReportContext) -> str:
    judges = ctx.record.judges
    lines = []
    if not judges:
        cot = [n for n, i in _alice_tasks(ctx) if i.get("category") == "cot"]
        if cot:
            lines.append(
                "No judge was configured: chain-of-thought compliance and CoT task scores are missing (not "
                "zero). Add `--judge openai --judge_args model=...,base_url=...` to score them."
            )
        return "\n".join(lines)
    lines += ["| judge | requests sent | failed verdicts |", "|---|---|---|"]
    for judge_id, info in judges.items():
        lines.append(f"| {judge_id} | {info.get('requests_sent', 0)} | {info.get('failed_verdicts', 0)} |")
    lines.append("")
    lines.append(
        "Samples whose verdict failed (API error or unreadable reply) are excluded from the scores, not "
        "counted as wrong; per task they show as `cot_judge_failed` / `task_judge_failed` rates."
    )
    return "\n".join(lines)


@register("alice")
def write_report(ctx: ReportContext) -> list[Path]:
    if not _alice_tasks(ctx):
        return []
    cells = fcr_cells(ctx)
    model = _model_label(ctx.record)
    written: list[Path] = []
    for category in ("ceq", "cot"):
        path = plot_performance(ctx, category, ctx.run_dir / f"alice_task_performance_{category}.png")
        if path is not None:
            written.append(path)
    parts = [
        f"# ALICE report — {model}",
        "",
        "## Format compliance rate (FCR, %) with 95% CIs",
        "",
        "Task Group A: ASR/SER/GR/MMAU; Task Group B: ASR/SER/GR. Few-shot is each item's mean over the "
        "evaluated k ≥ 1; ± is half the width of a 95% bootstrap interval over items. " + table2_notes(cells),
        "",
        table2_markdown(cells, model),
        "",
        "## CEQ format compliance by constraint group (few-shot, strict, %)",
        "",
        _group_table(ctx),
        "",
        "## Task performance (%; ASR: corpus WER, lower is better; SER/GR/MMAU: accuracy)",
        "",
        performance_markdown(ctx),
        "",
        "Figures: " + ", ".join(p.name for p in written) if written else "",
        "",
        "## Judge",
        "",
        _judge_section(ctx),
        "",
    ]
    md = ctx.run_dir / "alice_report.md"
    md.write_text("\n".join(parts))
    data = ctx.run_dir / "alice_fcr.json"
    data.write_text(json.dumps({"model": model, "metric": "format_strict", "cells": cells}, indent=2) + "\n")
    return [md, data, *written]
