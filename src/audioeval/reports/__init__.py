"""Benchmark-specific tables and plots, run on rank 0 after results.json is written.

A task or group YAML names its report as `report: module:function`. The function receives a ReportContext
and returns the paths it wrote; they are listed under `reports` in results.json."""

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
    rows: dict[str, list[Any]]  # task -> ScoreRow list (all ranks)
    registry: Any
    tasks: list[Any]  # PreparedTask list


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
