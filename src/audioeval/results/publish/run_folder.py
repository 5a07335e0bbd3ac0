"""Reading a finished run folder for publishing: results.json, the sample files, the summary and the reports.

`read_run` is the one place that reads a run; everything else takes the `RunFolder` it returns."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.errors import DataError, UsageError
from audioeval.results.outputs import INCOMPLETE_MARKER

# what every results.json written by a finished run holds, and what publishing reads from it
REQUIRED_FIELDS = {"results": dict, "groups": dict, "configs": dict, "model": dict, "seed": int, "date": str}


@dataclass
class RunFolder:
    path: Path
    record: dict[str, Any]  # results.json as written (secrets already masked by the run)
    samples: dict[str, Path]  # task -> samples_<task>.jsonl (only tasks of the run with a sample file)
    summary: Path | None  # summary.md, the full table
    reports: list[Path]  # the benchmark reports the run wrote into its folder


def read_run(run_dir: Path) -> RunFolder:
    """The run in `run_dir`, or one line saying why it is not a finished run."""
    path = run_dir.expanduser().resolve()
    if not path.exists():
        raise UsageError(f"{path}: no such folder; give a run folder (OUTPUT_PATH/<model>/<timestamp>/).")
    if not path.is_dir():
        raise UsageError(f"{path}: is a file, not a run folder; give the folder that holds its results.json.")
    results = path / "results.json"
    if not results.is_file():
        raise UsageError(_why_no_results(path))
    record = _read_record(results)
    samples = {t: path / f"samples_{t}.jsonl" for t in record["configs"]}
    reports = [path / Path(str(p)).name for p in record.get("reports") or []]
    return RunFolder(
        path=path,
        record=record,
        samples={t: p for t, p in samples.items() if p.is_file()},
        summary=path / "summary.md" if (path / "summary.md").is_file() else None,
        reports=[p for p in dict.fromkeys(reports) if p.is_file()],
    )


def _why_no_results(path: Path) -> str:
    if (path / INCOMPLETE_MARKER).exists():
        return (
            f"{path}: this run has not finished (its {INCOMPLETE_MARKER} file says so), so it has no results.json "
            "to publish; run the same command again to finish it (answers already received come from the "
            "cache), then push the new run folder."
        )
    runs = sorted(p.parent for p in path.glob("*/results.json")) + sorted(
        p.parent for p in path.glob("*/*/results.json")
    )
    if runs:
        return f"{path}: not a run folder, but it holds runs (e.g. {runs[-1]}); give one of them."
    return (
        f"{path}: not a run folder (no results.json); a finished `audioeval --output_path OUTPUT_PATH ...` run "
        "writes OUTPUT_PATH/<model>/<timestamp>/results.json."
    )


def _read_record(results: Path) -> dict[str, Any]:
    try:
        record = json.loads(results.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise DataError(f"{results}: not UTF-8 text (byte {err.start}); the file is damaged.") from err
    except json.JSONDecodeError as err:
        raise DataError(
            f"{results}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno}); the file is damaged: "
            "rerun the evaluation to write it again."
        ) from err
    if not isinstance(record, dict):
        raise DataError(
            f"{results}: expected a JSON object, found {type(record).__name__}; the file is damaged."
        )
    for name, kind in REQUIRED_FIELDS.items():
        if not isinstance(record.get(name), kind):
            found = "missing" if name not in record else f"a {type(record[name]).__name__}"
            raise DataError(
                f"{results}: field `{name}` is {found}, expected a {kind.__name__}; this is not a results.json "
                "written by a finished audioeval run (or it was edited)."
            )
    if not isinstance(record["model"].get("name"), str):
        raise DataError(f"{results}: field `model.name` is missing; the file is damaged.")
    return record
