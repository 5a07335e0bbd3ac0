"""Benchmark-specific tables and plots, run on rank 0 after results.json is written.

A task or group YAML names its report as `report: module:function`. The function receives a ReportContext
and returns the paths it wrote; they are listed under `reports` in results.json.

A report only formats: every number it shows comes from results.json (`results`, `groups`, `facets`) or the
scored samples, and what it knows about a task (its paper name, axis, chance level ...) from the task's YAML
`metadata`. It finds its tasks with `benchmark_tasks` (a `metadata` block named after the benchmark)."""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.errors import ConfigError

log = logging.getLogger("audioeval")


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


def resolve_report(spec: str, source: str) -> Any:
    module_name, _, func = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, func)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"{source}: report {spec!r} cannot be imported ({err}).") from err


def run_reports(specs: dict[str, str], context: ReportContext) -> list[str]:
    """specs: report spec -> where it was declared. Failures are logged, never lose the results."""
    written: list[str] = []
    for spec, source in specs.items():
        try:
            paths = resolve_report(spec, source)(context) or []
            written.extend(str(p) for p in paths)
        except Exception as err:  # noqa: BLE001 - a broken plot must not cost the user their results
            log.error("report %s (from %s) failed: %s: %s", spec, source, type(err).__name__, err)
    return written
