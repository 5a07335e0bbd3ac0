"""Benchmark-specific tables and plots, run on rank 0 once the run's results are complete.

A task or group YAML names its report as `report:` a registered name (`@register("name")` in a benchmark
wing's `report` module), `module:function` or `./file.py:function` (see audioeval.hooks). The names are
resolved once, before the run starts (`resolve_reports`); each function then runs once, receives a
ReportContext and returns the paths it wrote, listed under `reports` in results.json.

A report only formats: every number it shows comes from the run's record (`ReportContext.record`, typed:
the sections `results`, `groups`, `facets`, `pooled`, `reference_models` of results.json) or the scored
samples, and what it knows about a task (its paper name, axis,
chance level ...) from the task's YAML `metadata`. It finds its tasks with `benchmark_tasks` (a `metadata`
block named after the benchmark)."""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import TaskConfig
from audioeval.hooks import HookKind
from audioeval.results.outputs import mask_written_file
from audioeval.results.record import RunRecord
from audioeval.results.score_rows import ScoreRow

log = logging.getLogger("audioeval")


class ReportTask(Protocol):
    """What a report may read of a task of the run (a prepared task satisfies it)."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> TaskConfig: ...


@dataclass
class ReportContext:
    record: RunRecord  # the run's numbers and description, typed (what results.json holds)
    run_dir: Path
    rows: dict[str, list[ScoreRow]]  # task -> its scored samples (all ranks)
    registry: TaskRegistry
    tasks: Sequence[ReportTask]  # the clean tasks of the run, in run order

    @cached_property
    def results(self) -> dict[str, Any]:
        """The results.json content as JSON (for reports written against the file rather than the types)."""
        return self.record.to_json()


ReportFunction = Callable[[ReportContext], Iterable[str | Path] | None]
REPORTS: HookKind[ReportFunction] = HookKind("report", core_modules=(), wing_module="report")
register = REPORTS.register


def imports_ahead(*modules: str) -> Callable[[ReportFunction], ReportFunction]:
    """Mark a report whose modules (a plotting library: half a second of import) may be imported while the
    run's last answers come, rather than after them (`report_imports`)."""

    def mark(function: ReportFunction) -> ReportFunction:
        function.imports_ahead = modules  # type: ignore[attr-defined]
        return function

    return mark


class ReportImports:
    """What the run's reports marked with `imports_ahead`: imported on another thread while the run's last
    answers come (`import_now`), and settled before the reports run (`close`: it waits for an import in
    progress and keeps any from starting later, since two threads importing one package at once can fail on
    its import cycles). A module that fails to import is left to its report, which says so when it runs."""

    def __init__(self, reports: Sequence[Report]) -> None:
        self.modules = list(
            dict.fromkeys(m for r in reports for m in getattr(r.function, "imports_ahead", ()))
        )
        self._lock = threading.Lock()
        self._closed = False

    def import_now(self) -> None:
        with self._lock:
            if self._closed:
                return
            for module in self.modules:
                try:
                    importlib.import_module(module)
                except Exception:  # noqa: BLE001, S112 - the report imports it again and reports the failure
                    continue

    def close(self) -> None:
        with self._lock:
            self._closed = True


def benchmark_tasks(record: RunRecord, namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(task, its YAML `metadata[namespace]`) for each clean (not augmented) task of the run whose metadata
    has that block, in the order of results.json."""
    found = []
    for name in record.sections.results:
        entry = record.configs.get(name)
        if entry is None or entry.augment is not None:
            continue
        block = (entry.config.get("metadata") or {}).get(namespace)
        if isinstance(block, dict):
            found.append((name, block))
    return found


@dataclass(frozen=True)
class Report:
    spec: str  # the YAML value
    source: str  # the task or group file that names it
    function: ReportFunction


def resolve_reports(
    registry: TaskRegistry, tasks: Sequence[ReportTask], group_names: list[str]
) -> list[Report]:
    """The reports the tasks and groups name, each function once (in the order first named). A name that
    resolves to nothing is an error naming the file, raised before any request is sent."""
    named: list[tuple[str, str, Path | None]] = [
        (t.config.report, str(t.config.path), t.config.dir_of("report")) for t in tasks if t.config.report
    ]
    for g in group_names:
        group = registry.groups[g]
        if group.report:
            named.append((group.report, str(group.path), group.path.parent if group.path else None))
    reports: list[Report] = []
    for spec, source, base_dir in named:
        function = REPORTS.resolve(spec, base_dir, f"{source}: `report`")
        if all(r.function is not function for r in reports):
            reports.append(Report(spec, source, function))
    return reports


def run_reports(reports: list[Report], context: ReportContext) -> list[str]:
    """Each report in order. Failures are logged, never lose the results."""
    written: list[str] = []
    for report in reports:
        try:
            paths = [Path(p) for p in report.function(context) or []]
            for path in paths:  # a report formats the run's texts: the secrets in them are masked here
                mask_written_file(path)
            written.extend(str(p) for p in paths)
        except Exception as err:  # noqa: BLE001 - a broken plot must not cost the user their results
            log.error(
                "report %s (from %s) failed: %s: %s", report.spec, report.source, type(err).__name__, err
            )
    return written
