"""Benchmark-specific tables and plots, run on rank 0 after results.json is written.

A task or group YAML names its report as `report:` a registered name (`@register("name")` in a benchmark
wing's `report` module), `module:function` or `./file.py:function` (see audioeval.hooks). The function
receives a ReportContext and returns the paths it wrote; they are listed under `reports` in results.json.

A report only formats: every number it shows comes from results.json (`results`, `groups`, `facets`) or the
scored samples, and what it knows about a task (its paper name, axis, chance level ...) from the task's YAML
`metadata`. It finds its tasks with `benchmark_tasks` (a `metadata` block named after the benchmark)."""

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
    rows: dict[str, list[Any]]  # task -> ScoreRow list (all ranks): the scored samples
    registry: Any
    tasks: list[Any]  # PreparedTask list


def benchmark_tasks(results: dict[str, Any], namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """(task, its YAML `metadata[namespace]`) for each clean (not augmented) task of the run whose metadata
    has that block, in the order of results.json."""
    configs = results.get("configs") or {}
    found = []
    for name in results.get("results") or {}:
        entry = configs.get(name) or {}
        block = ((entry.get("config") or {}).get("metadata") or {}).get(namespace)
        if isinstance(block, dict) and "augment" not in entry:
            found.append((name, block))
    return found


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
