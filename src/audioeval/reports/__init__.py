"""Benchmark-specific tables and plots, run on rank 0 after results.json is written.

A task or group YAML names its report as `report:` a registered name (`@register("name")` in a benchmark
wing's `report` module), `module:function` or `./file.py:function` (see audioeval.hooks). The function
receives a ReportContext and returns the paths it wrote; they are listed under `reports` in results.json."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.hooks import HookKind

log = logging.getLogger("audioeval")
REPORTS = HookKind("report", core_modules=(), wing_module="report")
register = REPORTS.register


@dataclass
class ReportContext:
    results: dict[str, Any]  # the results.json content
    run_dir: Path
    rows: dict[str, list[Any]]  # task -> ScoreRow list (all ranks)
    registry: Any
    tasks: list[Any]  # PreparedTask list


@dataclass(frozen=True)
class ReportHook:
    spec: str  # the YAML value
    source: str  # the task or group file that names it
    base_dir: Path | None  # where a `./file.py` in the spec is read from

    def resolve(self) -> Callable[[ReportContext], Any]:
        return REPORTS.resolve(self.spec, self.base_dir, f"{self.source}: `report`")


def run_reports(hooks: list[ReportHook], context: ReportContext) -> list[str]:
    """Each report function once, in order. Failures are logged, never lose the results."""
    written: list[str] = []
    done: set[Any] = set()
    for hook in hooks:
        try:
            report = hook.resolve()
            if report in done:
                continue
            done.add(report)
            paths = report(context) or []
            written.extend(str(p) for p in paths)
        except Exception as err:  # noqa: BLE001 - a broken plot must not cost the user their results
            log.error("report %s (from %s) failed: %s: %s", hook.spec, hook.source, type(err).__name__, err)
    return written
