"""AudioICL-Bench report: accuracy per task and k with 95% CIs next to each task's chance level (as the
paper states it) and the `shortcut` baseline's accuracy on the same episodes (what a model scores without
analysing the signal), the A2 and A3 averages of Table III with their CIs, and a shot-scaling figure (one
panel per task, CI bands, dotted chance line, dashed shortcut line). Written to the run folder as
audioicl_report.md and audioicl_shot_scaling.png.

It only formats the run's record (results.json, typed): task accuracies from `results`, the A2/A3 averages from the groups whose YAML
`metadata` names an axis (`groups`), the shortcut column from `reference_models` (the tasks declare
`reference_models: [shortcut]`), and each task's paper name, axis and chance level from its YAML
`metadata.audioicl_bench`.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from audioeval.results.blocks import ShotBlock, by_shots, shot_key
from audioeval.results.record import RunRecord
from audioeval.results.reports import ReportContext, benchmark_tasks, imports_ahead, register

log = logging.getLogger("audioeval")
BENCHMARK = "audioicl_bench"  # the tasks' and groups' metadata block
SHORTCUT = "shortcut"  # the reference model behind the shortcut column


def _accuracy(block: ShotBlock | None) -> dict[str, Any]:
    stats = block.get("accuracy") if block else None
    ci = stats.ci95 if stats and stats.ci95 else (None, None)
    return {
        "accuracy": stats.value if stats else None,
        "ci95": list(ci),
        "n": block.n if block else None,
        "parse_failure_rate": block.value("parse_failure_rate") if block else None,
    }


def collect(record: RunRecord) -> list[dict[str, Any]]:
    """One record per evaluated AudioICL-Bench task: names, axis, chance, parameters, per-k results and the
    shortcut baseline's accuracy on the same episodes."""
    shortcut = record.sections.reference_models.get(SHORTCUT) or {}
    records = []
    for task, info in benchmark_tasks(record, BENCHMARK):
        per_k = {}
        for k, block in by_shots(record.sections.results[task]).items():
            per_k[k] = _accuracy(block)
            theirs = (shortcut.get(task) or {}).get(shot_key(k))
            per_k[k]["shortcut"] = theirs.value("accuracy") if theirs else None
        records.append(
            {
                "task": task,
                "short": info["short"],
                "name": info["name"],
                "group": info["axis"],
                "chance": float(info["chance"]),
                "chance_note": info.get("chance_note"),
                "params": dict(record.configs[task].config.get("parameters") or {}),
                "per_k": per_k,
            }
        )
    return records


def axis_groups(ctx: ReportContext) -> dict[str, str]:
    """Axis -> the group (declared in YAML with `metadata.audioicl_bench.axis`) whose mean is its average."""
    out = {}
    for name, group in ctx.registry.groups.items():
        axis = ((group.metadata or {}).get(BENCHMARK) or {}).get("axis")
        if axis:
            out[str(axis)] = name
    return dict(sorted(out.items()))


def group_rows(ctx: ReportContext) -> dict[str, dict[int, dict[str, Any]]]:
    """Axis -> k -> the group's accuracy with its CI, the tasks it averages and the tasks it has; for the
    axis groups that ran, and the same from `reference_models` for the shortcut column."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    sections = ctx.record.sections
    for axis, name in axis_groups(ctx).items():
        size = len(ctx.registry.leaf_tasks(name))
        shortcut = (sections.reference_models.get(SHORTCUT) or {}).get(name) or {}
        for k, block in by_shots(sections.groups.get(name) or {}).items():
            row = _accuracy(block)
            accuracy = block.get("accuracy")
            row["tasks"] = len(block.subtasks or []) - len(accuracy.unscored if accuracy else [])
            row["size"] = size
            theirs = shortcut.get(shot_key(k))
            row["shortcut"] = theirs.value("accuracy") if theirs else None
            out.setdefault(axis, {})[k] = row
    return out


def footnotes(ctx: ReportContext) -> list[str]:
    """Which tasks each average holds (from the groups' YAML), and the notes of tasks in no average."""
    short = {name: ((task.metadata or {}).get(BENCHMARK) or {}) for name, task in ctx.registry.tasks.items()}
    groups = axis_groups(ctx)
    members = {axis: ctx.registry.leaf_tasks(name) for axis, name in groups.items()}
    lines = []
    if groups:
        lines.append(
            "; ".join(
                f"{axis} = " + ", ".join(short[t].get("short", t) for t in ts) for axis, ts in members.items()
            )
            + " (unweighted means of task accuracies, as in Table III)."
        )
    averaged = {t for ts in members.values() for t in ts}
    lines += [info["note"] for name, info in short.items() if info.get("note") and name not in averaged]
    evaluated = set(ctx.record.sections.results)
    for axis, name in groups.items():
        ran = [t for t in members[axis] if t in evaluated]
        if ran and name not in ctx.record.sections.groups:
            lines.append(
                f"No {axis} average: its group `{name}` was not run ({len(ran)} of its {len(members[axis])} "
                f"tasks were); run `--tasks {name}` for it."
            )
    return lines


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _chance(record: dict[str, Any]) -> str:
    if record["chance_note"]:
        return "≈0 (" + record["chance_note"] + ")"
    return f"{100 * record['chance']:.1f}"


def _cell(res: dict[str, Any] | None, with_n: bool = True) -> str:
    if not res or res["accuracy"] is None:
        return "—"
    lo, hi = res["ci95"]
    ci = f" [{_pct(lo)}, {_pct(hi)}]" if lo is not None and hi is not None else ""
    return f"{_pct(res['accuracy'])}{ci}" + (f" (n={res['n']})" if with_n else "")


def _shortcut_cell(per_k: dict[int, Any], ks: list[int]) -> str:
    return " / ".join(_pct(per_k[k]) if per_k.get(k) is not None else "—" for k in ks)


def markdown(
    records: list[dict[str, Any]],
    groups: dict[str, dict[int, dict[str, Any]]],
    model: str,
    notes: list[str],
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
        f"Model: `{model}`; prompt style / layout: {builds}. Accuracy in % "
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
        failures = [
            v["parse_failure_rate"] for v in r["per_k"].values() if v["parse_failure_rate"] is not None
        ]
        lines.append(
            f"| {r['name']} ({r['short']}) | {r['group']} | {_chance(r)} | "
            + _shortcut_cell({k: v.get("shortcut") for k, v in r["per_k"].items()}, ks)
            + " | "
            + " | ".join(_cell(r["per_k"].get(k)) for k in ks)
            + f" | {_pct(max(failures)) if failures else '—'} |"
        )
    for axis, per_k in groups.items():
        cells = []
        for k in ks:
            row = per_k.get(k)
            note = ""
            if row is not None and row["accuracy"] is not None and row["tasks"] != row["size"]:
                note = f" ({row['tasks']}/{row['size']} tasks)"  # some of its tasks have no score
            cells.append(_cell(row, with_n=False) + note)
        lines.append(
            f"| **{axis} average** | {axis} | | "
            + _shortcut_cell({k: v.get("shortcut") for k, v in per_k.items()}, ks)
            + " | "
            + " | ".join(cells)
            + " | |"
        )
    return "\n".join([*lines, "", *notes, ""])


def plot(records: list[dict[str, Any]], path: Path) -> Path:
    """Accuracy vs k per task, three panels a row, sized to be read at 100 % zoom where the viewer shows it
    (about 1,000 px wide); one legend for the figure, above the panels, so it covers no line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(records)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    # at least 5 in wide: the legend's one row (4.7 in) fits above a single panel too
    fig = Figure(figsize=(max(5.0, 3.4 * cols), 2.7 * rows + 0.8), dpi=100)
    FigureCanvasAgg(fig)
    for i, r in enumerate(records):
        ax = fig.add_subplot(rows, cols, i + 1)
        points = sorted((k, v) for k, v in r["per_k"].items() if v["accuracy"] is not None)
        if points:
            ks = [k for k, _ in points]
            acc = [100 * v["accuracy"] for _, v in points]
            lo = [100 * (v["ci95"][0] if v["ci95"][0] is not None else v["accuracy"]) for _, v in points]
            hi = [100 * (v["ci95"][1] if v["ci95"][1] is not None else v["accuracy"]) for _, v in points]
            ax.fill_between(ks, lo, hi, alpha=0.25, color="tab:blue", linewidth=0, label="95% CI")
            ax.plot(ks, acc, marker="o", color="tab:blue", label="accuracy")
            ax.set_xticks(ks)
        ax.axhline(100 * r["chance"], color="black", linestyle=":", linewidth=1.3, label="chance")
        shortcut = sorted((k, v["shortcut"]) for k, v in r["per_k"].items() if v.get("shortcut") is not None)
        if shortcut:
            ax.plot(
                [k for k, _ in shortcut],
                [100 * v for _, v in shortcut],
                color="tab:red",
                linestyle="--",
                linewidth=1.3,
                label="shortcut",
            )
        ax.set_ylim(-2, 102)
        # y=1.0: where matplotlib puts it anyway (nothing sits above a panel), without first measuring every
        # tick label to find out (a tenth of the figure's drawing)
        ax.set_title(f"{r['name']} ({r['short']})", fontsize=11, y=1.0)
        ax.set_xlabel("shots k", fontsize=10)
        if i % cols == 0:
            ax.set_ylabel("accuracy (%)", fontsize=10)
        ax.tick_params(labelsize=9)
    handles: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.suptitle("AudioICL-Bench shot scaling", fontsize=13, y=0.995)
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="upper center",
        ncol=len(handles),
        fontsize=10,
        frameon=False,
        bbox_to_anchor=(0.5, 1 - 0.4 / fig.get_figheight()),
    )
    _place_panels(fig, rows, cols)
    fig.savefig(path)
    return path


# margins around and gaps between the panels, in inches: what tight_layout works out for these fonts and labels
# (titles of about 25 characters, ticks 0-100), and the band above for the title and the legend
_MARGINS_IN = {"left": 0.69, "right": 0.15, "bottom": 0.57, "top": 1.38, "wgap": 0.49, "hgap": 0.77}


def _place_panels(fig: Any, rows: int, cols: int) -> None:
    """Fixed margins instead of tight_layout, which renders the whole figure once more to measure its texts
    (0.2 s at the end of every run, where nothing else is left to do)."""
    width, height = fig.get_figwidth(), fig.get_figheight()
    m = _MARGINS_IN
    panel_w = (width - m["left"] - m["right"] - (cols - 1) * m["wgap"]) / cols
    panel_h = (height - m["bottom"] - m["top"] - (rows - 1) * m["hgap"]) / rows
    fig.subplots_adjust(
        left=m["left"] / width,
        right=1 - m["right"] / width,
        bottom=m["bottom"] / height,
        top=1 - m["top"] / height,
        wspace=m["wgap"] / panel_w,
        hspace=m["hgap"] / panel_h,
    )


@register("audioicl_bench")
@imports_ahead("matplotlib.figure", "matplotlib.backends.backend_agg")
def write_report(ctx: ReportContext) -> list[Path]:
    records = collect(ctx.record)
    if not records:
        return []
    table = ctx.run_dir / "audioicl_report.md"
    text = markdown(records, group_rows(ctx), ctx.record.model.name, footnotes(ctx))
    table.write_text(text, encoding="utf-8")
    figure = plot(records, ctx.run_dir / "audioicl_shot_scaling.png")
    return [table, figure]
