"""The comparison table in each output format: a terminal table (default), markdown, csv, json and LaTeX.

Terminal, markdown and csv list one line per row and run: its value with the 95% CI its run reports, and for
every run but the baseline the difference with its 95% CI, the test, the p-value and its Holm-adjusted value,
the pairs and the failed pairs. LaTeX lays the same numbers out as the papers do: one row per run (model), one
column per task or group and k, the best value of each column in bold, a dagger on a value that differs
significantly from the baseline's (Holm-adjusted p < 0.05). Terminal, markdown and LaTeX show proportions
(accuracy, rates) in % and their differences in percentage points, as the run's own tables do
(results/units.py); csv and json keep the fractions results.json holds."""

from __future__ import annotations

import csv
import io
import json
import math

from audioeval.results.compare.comparison import Comparison, Difference, Row, RunValue
from audioeval.results.compare.paper import PaperColumn, PaperTable, latex_escape, latex_table
from audioeval.results.units import is_proportion

UNITS = "proportions (accuracy, rates) in %, their differences in percentage points; other scores in their own unit"
MACHINE_UNITS = "csv and json keep the fractions results.json holds"
CSV_COLUMNS = [
    "kind", "name", "setting", "metric", "lower_is_better", "run", "folder", "baseline", "value", "ci95_low",
    "ci95_high", "n", "difference", "difference_ci95_low", "difference_ci95_high", "test", "p", "p_holm",
    "pairs", "failed_pairs", "base_only", "other_only",
]  # fmt: skip


def number(value: float | None, digits: int = 3, sign: bool = False, percent: bool = False) -> str:
    if value is None or math.isnan(value):
        return "—"
    if percent:
        value, digits = 100 * value, 1
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def interval(
    ci: tuple[float, float] | None, digits: int = 3, sign: bool = False, percent: bool = False
) -> str:
    if ci is None:
        return ""
    return f" [{number(ci[0], digits, sign, percent)}, {number(ci[1], digits, sign, percent)}]"


def is_percent(row: Row) -> bool:
    """Whether the row's score is a proportion, by the rule of the run's own tables (results/units.py)."""
    return is_proportion([x for v in row.values for x in (v.value, *(v.ci95 or ()))])


def p_text(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _lines(comparison: Comparison) -> list[list[str]]:
    header = ["task / group", "k", "metric", "run", "value [95% CI]", "Δ vs baseline [95% CI]", "test", "p",
              "p (Holm)", "pairs", "failed"]  # fmt: skip
    out = [header]
    for row in comparison.rows:
        name = row.name if row.kind == "task" else f"{row.kind}: {row.name}"
        setting = str(row.k) if row.k is not None else row.setting
        metric = row.metric + (" ↓" if row.lower_is_better else "")
        percent = is_percent(row)
        for i, (value, diff) in enumerate(zip(row.values, row.differences, strict=True)):
            label = comparison.labels[i] + (" (baseline)" if i == comparison.baseline else "")
            shown = number(value.value, percent=percent) + (
                "%" if percent and value.value is not None else ""
            )
            cells = [name, setting, metric, label, shown + interval(value.ci95, percent=percent)]
            cells += _difference_cells(diff, percent)
            out.append(cells)
    return out


def _difference_cells(diff: Difference | None, percent: bool) -> list[str]:
    if diff is None:
        return ["", "", "", "", "", ""]
    mark = " *" if diff.significant else ""
    pairs = "" if diff.pairs is None else str(diff.pairs)
    failed = "" if diff.failed_pairs is None else str(diff.failed_pairs)
    unit = " pp" if percent and diff.value is not None else ""
    return [
        number(diff.value, sign=True, percent=percent)
        + interval(diff.ci95, sign=True, percent=percent)
        + unit,
        diff.test,
        p_text(diff.p),
        p_text(diff.p_holm) + mark,
        pairs,
        failed,
    ]


def _footer(comparison: Comparison) -> list[str]:
    lines = []
    if comparison.paired:
        lines.append(
            f"paired over the samples both runs logged ({comparison.resamples} bootstrap resamples over episodes, "
            "clusters of episodes that share data resampled together); p: exact McNemar for 0/1 scores, else a "
            "sign-flip permutation test; * Holm-adjusted p < 0.05 across the table"
        )
    else:
        lines.append(
            "unpaired: Δ's CI and p from a normal approximation to the runs' reported standard errors; * Holm-adjusted "
            "p < 0.05 across the table"
        )
    lines.append(
        f"{UNITS} ({MACHINE_UNITS}); ↓ lower is better; failed: pairs where either run gave no answer"
    )
    return lines


def terminal(comparison: Comparison) -> str:
    lines = _lines(comparison)
    widths = [max(len(line[c]) for line in lines) for c in range(len(lines[0]))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(
        [*comparison.notes, *([""] if comparison.notes else []), *text, "", *_footer(comparison)]
    )


def markdown(comparison: Comparison) -> str:
    lines = _lines(comparison)
    table = ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in lines]
    table.insert(1, "|" + "---|" * len(lines[0]))
    notes = [f"> {note}" for note in comparison.notes]
    return "\n".join([*notes, *([""] if notes else []), *table, "", *_footer(comparison)])


def csv_text(comparison: Comparison) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in comparison.rows:
        for i, (value, diff) in enumerate(zip(row.values, row.differences, strict=True)):
            writer.writerow(_csv_row(comparison, row, i, value, diff))
    return buffer.getvalue()


def _csv_row(
    comparison: Comparison, row: Row, i: int, value: RunValue, diff: Difference | None
) -> list[object]:
    def plain(x: float | None) -> object:
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else x

    ci = value.ci95 or (None, None)
    d_ci = (diff.ci95 if diff else None) or (None, None)
    return [
        row.kind, row.name, row.setting, row.metric, row.lower_is_better, comparison.labels[i],
        comparison.folders[i], i == comparison.baseline, plain(value.value), plain(ci[0]), plain(ci[1]), value.n,
        plain(diff.value if diff else None), plain(d_ci[0]), plain(d_ci[1]), diff.test if diff else "",
        plain(diff.p if diff else None), plain(diff.p_holm if diff else None),
        "" if diff is None or diff.pairs is None else diff.pairs,
        "" if diff is None or diff.failed_pairs is None else diff.failed_pairs,
        "" if diff is None or diff.base_only is None else diff.base_only,
        "" if diff is None or diff.other_only is None else diff.other_only,
    ]  # fmt: skip


def json_text(comparison: Comparison) -> str:
    return json.dumps(comparison.to_json(), indent=2, ensure_ascii=False) + "\n"


def latex(comparison: Comparison) -> str:
    """One row per run, one column per compared row (task or group and k)."""
    columns = [
        PaperColumn(
            row.name if row.kind == "task" else f"{row.kind} {row.name}",
            f"k={row.k}" if row.k is not None else row.setting,
            row.kind,
            row.name,
            row.setting,
            row.metric,
            percent=is_percent(row),
            digits=1 if is_percent(row) else 3,
        )  # fmt: skip
        for row in comparison.rows
    ]
    caption = (
        f"{'Paired' if comparison.paired else 'Unpaired'} comparison against "
        f"{latex_escape(comparison.labels[comparison.baseline])} "
        f"(95\\% CIs; {latex_escape(UNITS)}). Bold: best per column; $^\\dagger$: differs from the baseline, Holm-adjusted "
        "$p<0.05$."
    )
    return latex_table(comparison, PaperTable("audioeval compare", caption, columns))
