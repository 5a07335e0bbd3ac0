"""AudioICL-Bench report: accuracy per task and k with 95% CIs next to each task's chance level (as the
paper states it) and the `shortcut` baseline's accuracy on the same episodes (what a model scores without
analysing the signal), the A2 and A3 averages of Table III, and a shot-scaling figure (one panel per task, CI
bands, dotted chance line, dashed shortcut line). Written to the run folder as audioicl_report.md and
audioicl_shot_scaling.png.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from audioeval.models.baselines.shortcut import ShortcutModel
from audioeval.reports import ReportContext
from audioeval.scoring import SampleToScore

log = logging.getLogger("audioeval")

# config -> (short name used in the paper, full name, Axis-A group, chance accuracy from the paper)
TASKS: dict[str, tuple[str, str, str, float]] = {
    "audio_count": ("AC", "AudioCount", "A2", 1 / 8),
    "audio_count_hard": ("ACH", "AudioCountHard", "A2", 1 / 8),
    "audio_operator": ("AO", "AudioOperator", "A2", 1 / 3),
    "audio_operator_hard": ("AOH", "AudioOperatorHard", "A2", 1 / 9),
    "audio_remap": ("AR", "AudioRemap", "A2", 1 / 8),
    "anomaly_detect": ("AD", "AnomalyDetect", "A2", 1 / 2),
    "audio_length": ("AL", "AudioLength", "A3", 1 / 20),
    "audio_length_hard": ("ALH", "AudioLengthHard", "A3", 1 / 20),
    "morse_code": ("MC", "MorseCode", "A3", (1 / 26) ** 5),
    "morse_letter": ("ML", "MorseLetter (ablation)", "ablation", 1 / 26),
}
CHANCE_NOTES = {"morse_code": "(1/26)^L for an L-letter word; (1/26)^5 for the shipped list"}
GROUPS = ("A2", "A3")


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def collect(ctx: ReportContext) -> list[dict[str, Any]]:
    """One record per evaluated AudioICL-Bench task: config, names, chance, parameters and per-k results."""
    records = []
    for task in ctx.tasks:
        config = task.config.builder_config
        if task.config.builder != "audioicl_bench" or config not in TASKS:
            continue
        short, full, group, chance = TASKS[config]
        per_k = {}
        for k in task.shots:
            block = (ctx.results.get("results", {}).get(task.name) or {}).get(f"{k}-shot") or {}
            ci = block.get("accuracy_ci95") or [None, None]
            per_k[k] = {
                "accuracy": _number(block.get("accuracy")),
                "ci95": [_number(ci[0]), _number(ci[1])],
                "n": block.get("n"),
                "parse_failure_rate": _number(block.get("parse_failure_rate")),
            }
        records.append(
            {
                "task": task.name,
                "config": config,
                "short": short,
                "name": full,
                "group": group,
                "chance": chance,
                "params": dict(task.config.param_values),
                "per_k": per_k,
            }
        )
    order = list(TASKS)
    return sorted(records, key=lambda r: order.index(r["config"]))


def shortcut_episode_scores(model: ShortcutModel, task: Any, episode: dict[str, Any]) -> dict[int, float]:
    """k -> the `shortcut` model's score (0/1 accuracy) on one episode of a prepared task, scored by the task."""
    pairs = task.requests_for(episode)
    responses = model.generate([request for request, _ in pairs])
    samples = [
        SampleToScore(response.text or "", target, request.info["sample_info"])
        for (request, target), response in zip(pairs, responses, strict=True)
    ]
    return {
        request.rid.shots: scored["scores"].get("accuracy") or 0.0
        for (request, _), scored in zip(pairs, task.scorer.score(samples), strict=True)
    }


def shortcut_scores(ctx: ReportContext, records: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """Task -> k -> accuracy of the `shortcut` baseline on the run's own episodes (recomputed here unless the
    run's model is `shortcut`): it needs no model and no signal analysis, only the episodes again."""
    if (ctx.results.get("model") or {}).get("name") == ShortcutModel.name:
        return {
            r["task"]: {k: v["accuracy"] for k, v in r["per_k"].items() if v["accuracy"] is not None}
            for r in records
        }
    started = time.perf_counter()
    wanted = {r["task"] for r in records}
    tasks = [t for t in ctx.tasks if t.name in wanted]
    model = ShortcutModel(seed=int(ctx.results.get("seed") or 0))
    model.prepare(tasks)
    out: dict[str, dict[int, float]] = {}
    for task in tasks:
        scores: dict[int, list[float]] = defaultdict(list)
        for index in task.indices:
            for k, score in shortcut_episode_scores(model, task, task.episode(index)).items():
                scores[k].append(score)
        out[task.name] = {k: sum(v) / len(v) for k, v in scores.items()}
    log.info(
        "audioicl report: shortcut baseline scored on the run's episodes in %.1fs",
        time.perf_counter() - started,
    )
    return out


def group_means(
    records: list[dict[str, Any]], field: str = "accuracy"
) -> dict[str, dict[int, tuple[float, int, int]]]:
    """A2/A3 -> k -> (mean of `field` over the group's evaluated tasks, tasks evaluated, tasks in the group)."""
    out: dict[str, dict[int, tuple[float, int, int]]] = {}
    for group in GROUPS:
        size = sum(1 for t in TASKS.values() if t[2] == group)
        members = [r for r in records if r["group"] == group]
        ks = sorted({k for r in members for k in r["per_k"]})
        for k in ks:
            values = [r["per_k"][k][field] for r in members if r["per_k"].get(k, {}).get(field) is not None]
            if values:
                out.setdefault(group, {})[k] = (sum(values) / len(values), len(values), size)
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _chance(record: dict[str, Any]) -> str:
    if record["config"] in CHANCE_NOTES:
        return "≈0 (" + CHANCE_NOTES[record["config"]] + ")"
    return f"{100 * record['chance']:.1f}"


def _shortcut_cell(per_k: dict[int, Any], ks: list[int]) -> str:
    return " / ".join(_pct(per_k[k]) if per_k.get(k) is not None else "—" for k in ks)


def markdown(
    records: list[dict[str, Any]],
    groups: dict[str, Any],
    ctx_results: dict[str, Any],
    shortcut_groups: dict[str, Any] | None = None,
) -> str:
    ks = sorted({k for r in records for k in r["per_k"]})
    params = sorted(
        {
            (r["params"].get("prompt_style"), r["params"].get("layout"), r["params"].get("shortcut_free"))
            for r in records
        },
        key=str,
    )
    builds = ", ".join(
        f"{'null' if s is None else s} / {lay}" + (" / shortcut_free" if free else "")
        for s, lay, free in params
    )
    k_list = " / ".join(str(k) for k in ks)
    lines = [
        "# AudioICL-Bench",
        "",
        f"Model: `{ctx_results.get('model', {}).get('name', '?')}`; prompt style / layout: {builds}. Accuracy in % "
        "with the 95% bootstrap CI over episodes; chance as stated in the paper; shortcut: accuracy of the "
        f"`shortcut` baseline on these same episodes at k = {k_list} (no signal analysis: clip identity, "
        "elimination, label statistics; docs/baselines.md). A score at or below shortcut can be explained "
        "without analysing the audio (for AudioOperator(Hard), beyond the query's operands, which its label "
        "space holds as the paper's chance assumes). With `--task_args shortcut_free=true` the episodes carry "
        "no clip-identity or elimination shortcut.",
        "",
        f"| task | axis | chance | shortcut (k = {k_list}) | "
        + " | ".join(f"k={k}" for k in ks)
        + " | parse failures (max over k) |",
        "|---|---|---|---|" + "---|" * len(ks) + "---|",
    ]
    for r in records:
        cells = []
        for k in ks:
            res = r["per_k"].get(k)
            if not res or res["accuracy"] is None:
                cells.append("—")
                continue
            lo, hi = res["ci95"]
            cells.append(f"{_pct(res['accuracy'])} [{_pct(lo)}, {_pct(hi)}] (n={res['n']})")
        failures = [
            v["parse_failure_rate"] for v in r["per_k"].values() if v["parse_failure_rate"] is not None
        ]
        lines.append(
            f"| {r['name']} ({r['short']}) | {r['group']} | {_chance(r)} | "
            + _shortcut_cell({k: v.get("shortcut") for k, v in r["per_k"].items()}, ks)
            + " | "
            + " | ".join(cells)
            + f" | {_pct(max(failures)) if failures else '—'} |"
        )
    for group in GROUPS:
        if group not in groups:
            continue
        cells = []
        for k in ks:
            if k in groups[group]:
                mean, have, size = groups[group][k]
                cells.append(f"{_pct(mean)}" + ("" if have == size else f" ({have}/{size} tasks)"))
            else:
                cells.append("—")
        shortcut = (shortcut_groups or {}).get(group, {})
        lines.append(
            f"| **{group} average** | {group} | | "
            + _shortcut_cell({k: v[0] for k, v in shortcut.items()}, ks)
            + " | "
            + " | ".join(cells)
            + " | |"
        )
    lines += [
        "",
        "A2 = AC, ACH, AO, AOH, AR, AD; A3 = AL, ALH, MC (unweighted means of task accuracies, as in Table III).",
        "MorseLetter is the single-letter ablation (Table IV) and is in neither average.",
        "",
    ]
    return "\n".join(lines)


def plot(records: list[dict[str, Any]], path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(records)
    cols = min(5, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(3.2 * cols, 2.8 * rows), dpi=110)
    FigureCanvasAgg(fig)
    for i, r in enumerate(records):
        ax = fig.add_subplot(rows, cols, i + 1)
        points = sorted((k, v) for k, v in r["per_k"].items() if v["accuracy"] is not None)
        if points:
            ks = [k for k, _ in points]
            acc = [100 * v["accuracy"] for _, v in points]
            lo = [100 * (v["ci95"][0] if v["ci95"][0] is not None else v["accuracy"]) for _, v in points]
            hi = [100 * (v["ci95"][1] if v["ci95"][1] is not None else v["accuracy"]) for _, v in points]
            ax.fill_between(ks, lo, hi, alpha=0.25, color="tab:blue", linewidth=0)
            ax.plot(ks, acc, marker="o", color="tab:blue", label="accuracy")
            ax.set_xticks(ks)
        ax.axhline(100 * r["chance"], color="black", linestyle=":", linewidth=1.2, label="chance")
        shortcut = sorted((k, v["shortcut"]) for k, v in r["per_k"].items() if v.get("shortcut") is not None)
        if shortcut:
            ax.plot(
                [k for k, _ in shortcut],
                [100 * v for _, v in shortcut],
                color="tab:red",
                linestyle="--",
                linewidth=1.2,
                label="shortcut",
            )
        ax.set_ylim(-2, 102)
        ax.set_title(f"{r['name']} ({r['short']})", fontsize=9)
        ax.set_xlabel("shots k", fontsize=8)
        if i % cols == 0:
            ax.set_ylabel("accuracy (%)", fontsize=8)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("AudioICL-Bench shot scaling (95% CI bands; dotted: chance; dashed: shortcut)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path


def write_report(ctx: ReportContext) -> list[Path]:
    records = collect(ctx)
    if not records:
        return []
    shortcut = shortcut_scores(ctx, records)
    for r in records:
        for k, res in r["per_k"].items():
            res["shortcut"] = shortcut.get(r["task"], {}).get(k)
    table = ctx.run_dir / "audioicl_report.md"
    table.write_text(
        markdown(records, group_means(records), ctx.results, group_means(records, "shortcut")),
        encoding="utf-8",
    )
    figure = plot(records, ctx.run_dir / "audioicl_shot_scaling.png")
    return [table, figure]
