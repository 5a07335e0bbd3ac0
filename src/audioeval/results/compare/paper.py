"""The papers' multi-model tables: one row per run (model), the paper's columns, each cell a run's value with
its 95% CI, the best of each column in bold and a dagger where a run differs significantly from the baseline
(Holm-adjusted p < 0.05 across the table's cells).

A benchmark wing declares its tables in its `paper_table` module, registered under the name of its report
(`@register_paper_table("<report name>")`): a function of the baseline's record and the task registry that
returns `PaperTable`s, each column naming the task, group or pooled setting and the metric it shows. The core
computes the numbers (`comparison.compare` with those rows) and lays them out; the wing only says which
numbers go where, as a report does."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from audioeval.config.registry import TaskRegistry
from audioeval.hooks import HookKind
from audioeval.results.compare.comparison import Comparison, Row, RowSpec
from audioeval.results.record import RunRecord


@dataclass(frozen=True)
class PaperColumn:
    group: str  # the header above it, shared by neighbouring columns ("A2 tasks", "Task Group A: one-shot")
    label: str  # its own header ("AC", "Stage 1")
    kind: str  # task | group | pooled
    name: str
    setting: str  # `<k>-shot` or a pooled setting
    metric: str
    percent: bool = False  # shown x 100
    digits: int = 1

    @property
    def spec(self) -> RowSpec:
        return RowSpec(self.kind, self.name, self.setting, self.metric)


@dataclass(frozen=True)
class PaperTable:
    title: str
    caption: str  # LaTeX; says what the numbers are (percent or not)
    columns: list[PaperColumn]


PaperTables = Callable[[RunRecord, TaskRegistry], list[PaperTable]]
PAPER_TABLES: HookKind[PaperTables] = HookKind("paper table", core_modules=(), wing_module="paper_table")
register_paper_table = PAPER_TABLES.register


def paper_tables(record: RunRecord, registry: TaskRegistry) -> list[PaperTable]:
    """The tables of every benchmark whose report the run's tasks name, in the order the tasks first name it."""
    names = dict.fromkeys(
        str(t.config.get("report")) for t in record.configs.values() if t.config.get("report")
    )
    known = set(PAPER_TABLES.names())
    tables: list[PaperTable] = []
    for name in names:
        if name in known:
            tables += PAPER_TABLES.resolve(name, None, "compare")(record, registry)
    return [t for t in tables if t.columns]


@dataclass
class _Cell:
    text: str  # value ± half the CI width, as the column shows it
    value: float | None
    best: bool = False
    significant: bool = False


def _cells(comparison: Comparison, table: PaperTable) -> list[list[_Cell]]:
    """Per run, per column: its cell; the best per column and the significant ones marked."""
    rows: list[Row | None] = [comparison.find(c.kind, c.name, c.setting, c.metric) for c in table.columns]
    out = [
        [_cell(row, c, i) for c, row in zip(table.columns, rows, strict=True)]
        for i in range(len(comparison.labels))
    ]
    for j, row in enumerate(rows):
        values = [v for cells in out if (v := cells[j].value) is not None]
        if row is None or not values:
            continue
        best = min(values) if row.lower_is_better else max(values)
        for cells in out:
            cells[j].best = cells[j].value == best
    return out


def _cell(row: Row | None, column: PaperColumn, run: int) -> _Cell:
    value = row.values[run] if row is not None else None
    if row is None or value is None or value.value is None:
        return _Cell("—", None)
    scale = 100.0 if column.percent else 1.0
    text = f"{value.value * scale:.{column.digits}f}"
    if value.ci95 is not None:
        text += f" ± {(value.ci95[1] - value.ci95[0]) * scale / 2:.{column.digits}f}"
    diff = row.differences[run]
    return _Cell(text, value.value, significant=diff is not None and diff.significant)


def _groups(columns: list[PaperColumn]) -> list[tuple[str, int]]:
    """Neighbouring columns under one header: (header, how many)."""
    spans: list[tuple[str, int]] = []
    for column in columns:
        if spans and spans[-1][0] == column.group:
            spans[-1] = (column.group, spans[-1][1] + 1)
        else:
            spans.append((column.group, 1))
    return spans


_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}", "↓": r"$\downarrow$", "—": "--"}  # fmt: skip
_LATEX_SPECIAL = re.compile("|".join(re.escape(char) for char in _LATEX))


def latex_escape(text: str) -> str:
    """Text as LaTeX writes it, every special character escaped in one pass (so no escape is escaped again)."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group()], text)


def latex_table(comparison: Comparison, table: PaperTable) -> str:
    cells = _cells(comparison, table)
    n = len(table.columns)
    lines = [
        r"\begin{table}[t]", r"\centering", rf"\caption{{{table.caption}}}", r"\resizebox{\linewidth}{!}{%",
        rf"\begin{{tabular}}{{l{'c' * n}}}", r"\toprule",
    ]  # fmt: skip
    spans = _groups(table.columns)
    if any(group for group, _ in spans):
        heads, rules, start = [""], [], 2
        for group, width in spans:
            heads.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(group)}}}")
            if group:
                rules.append(rf"\cmidrule(lr){{{start}-{start + width - 1}}}")
            start += width
        lines += [" & ".join(heads) + r" \\", " ".join(rules)]
    lines.append(" & ".join(["Model", *(latex_escape(c.label) for c in table.columns)]) + r" \\")
    lines.append(r"\midrule")
    for i, row in enumerate(cells):
        label = latex_escape(comparison.labels[i]) + (" (baseline)" if i == comparison.baseline else "")
        lines.append(" & ".join([label, *(_latex_cell(c) for c in row)]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def _latex_cell(cell: _Cell) -> str:
    text = cell.text.replace(" ± ", r" $\pm$ ").replace("—", "--")
    if cell.best:
        text = rf"\textbf{{{text}}}"
    return text + (r"$^\dagger$" if cell.significant else "")


def markdown_table(comparison: Comparison, table: PaperTable) -> str:
    cells = _cells(comparison, table)
    head = ["model", *(f"{c.group}: {c.label}" if c.group else c.label for c in table.columns)]
    lines = [f"**{table.title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, row in enumerate(cells):
        label = comparison.labels[i] + (" (baseline)" if i == comparison.baseline else "")
        shown = [(f"**{c.text}**" if c.best else c.text) + (" †" if c.significant else "") for c in row]
        lines.append("| " + " | ".join([label, *shown]) + " |")
    return "\n".join([*lines, "", plain_caption(table.caption)])


def plain_caption(caption: str) -> str:
    """A LaTeX caption as text."""
    for latex, text in (
        (r"$^\dagger$", "†"),
        (r"$\pm$", "±"),
        (r"\geq", "≥"),
        (r"\%", "%"),
        ("--", "–"),
        ("$", ""),
    ):
        caption = caption.replace(latex, text)
    return caption


def has_values(comparison: Comparison, table: PaperTable) -> bool:
    """Whether any run has a number in any of the table's cells (a judged metric without a judge has none)."""
    return any(cell.value is not None for row in _cells(comparison, table) for cell in row)


def csv_table(comparison: Comparison, tables: list[PaperTable]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["table", "model", "baseline", "group", "column", "cell", "value", "best", "significant"])
    for table in tables:
        for i, row in enumerate(_cells(comparison, table)):
            for column, cell in zip(table.columns, row, strict=True):
                value = "" if cell.value is None else cell.value
                writer.writerow([table.title, comparison.labels[i], i == comparison.baseline, column.group,
                                 column.label, cell.text, value, cell.best, cell.significant])  # fmt: skip
    return buffer.getvalue()


def json_tables(comparison: Comparison, tables: list[PaperTable]) -> str:
    out: list[dict[str, Any]] = []
    for table in tables:
        rows = _cells(comparison, table)
        out.append(
            {
                "title": table.title,
                "caption": table.caption,
                "columns": [asdict(c) for c in table.columns],
                "rows": [
                    {
                        "model": comparison.labels[i],
                        "baseline": i == comparison.baseline,
                        "cells": [asdict(c) for c in row],
                    }
                    for i, row in enumerate(rows)
                ],
            }
        )
    return (
        json.dumps(
            {"baseline": comparison.labels[comparison.baseline], "tables": out},
            indent=2,
            allow_nan=False,
            default=_nan,
        )
        + "\n"
    )


def _nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else str(value)
