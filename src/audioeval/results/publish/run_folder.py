"""The finished run that `push-results` publishes: its record and the files it uploads (the sample files, the
summary, the reports). The folder is read by results/run_files.py, which names a damaged results.json or
sample line by file, line and field; this only refuses a run that has not finished."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audioeval.errors import UsageError
from audioeval.results.outputs import INCOMPLETE_MARKER
from audioeval.results.record import RunRecord
from audioeval.results.run_files import read_run


@dataclass
class RunFolder:
    path: Path
    record: RunRecord  # results.json as the run wrote it (secrets already masked by the run)
    samples: dict[str, Path]  # task -> samples_<task>.jsonl (only tasks of the run with a sample file)
    summary: Path | None  # summary.md, the full table
    reports: list[Path]  # the benchmark reports the run wrote into its folder


def finished_run(run_dir: Path) -> RunFolder:
    """The finished run in `run_dir`, or one line saying why there is none to publish."""
    files = read_run(run_dir)
    path = files.path
    if files.record is None:
        raise UsageError(
            f"{path}: this run has not finished (its {INCOMPLETE_MARKER} file says so), so it has no results.json "
            "to publish; run the same command again to finish it (answers already received come from the "
            "cache), then push the new run folder."
        )
    record = files.record
    samples = {t: path / f"samples_{t}.jsonl" for t in record.configs}  # merged: a finished run has no others
    reports = [path / Path(p).name for p in record.reports or []]
    return RunFolder(
        path=path,
        record=record,
        samples={t: p for t, p in samples.items() if p in files.sample_files.get(t, [])},
        summary=path / "summary.md" if (path / "summary.md").is_file() else None,
        reports=[p for p in dict.fromkeys(reports) if p.is_file()],
    )
