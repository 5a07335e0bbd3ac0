"""What `audioeval.evaluate` returns: the run's record, typed, with its tables and (when logged) samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from audioeval.results.record import PerK, RunRecord, Sections
    from audioeval.results.sample_record import SampleRecord
    from audioeval.run.conductor import RunOutcome


@dataclass
class EvaluationResult:
    """One run's results. `to_dict()` is the results.json content the run wrote (or would write)."""

    record: RunRecord
    run_dir: Path | None  # where the files went (None without output_path)
    table: str  # every metric with stderr, CI, n and failures (summary.md)
    compact_table: str  # the main metric per group, task and k with its CI (what the CLI prints)
    resume_note: str | None  # how much came from the response cache
    logged: bool = False  # whether the run logged its samples
    _samples: dict[str, list[SampleRecord]] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, outcome: RunOutcome, logged: bool) -> EvaluationResult:
        compact = outcome.compact or outcome.table
        return cls(outcome.record, outcome.run_dir, outcome.table, compact, outcome.resume_note, logged)

    @property
    def samples(self) -> dict[str, list[SampleRecord]] | None:
        """task -> its sample records in (episode, k) order, when the run logged them (None otherwise); read
        from the run folder on first use."""
        if self._samples is None and self.logged and self.run_dir is not None:
            self._samples = read_samples(self.run_dir)
        return self._samples

    def keep_samples_in_memory(self) -> None:
        """Read the samples now: the run folder is about to go (a run without output_path)."""
        self._samples = self.samples
        self.run_dir = None

    def to_dict(self) -> dict[str, Any]:
        """The results.json content."""
        return self.record.to_json()

    @property
    def sections(self) -> Sections:
        return self.record.sections

    @property
    def results(self) -> dict[str, PerK]:
        """task -> "<k>-shot" -> its block: `block["accuracy"]` has `value`, `stderr`, `ci95`, `n`, `failures`."""
        return self.record.sections.results

    @property
    def groups(self) -> dict[str, PerK]:
        """group -> "<k>-shot" -> its block, as `results`."""
        return self.record.sections.groups

    @property
    def warnings(self) -> list[str]:
        """What went wrong without stopping the run (failed requests, unjudged tasks, ...)."""
        return self.record.warnings

    @property
    def unscored_tasks(self) -> list[str]:
        """Tasks that got no answer at all (every request failed)."""
        return self.record.unscored_tasks

    def __str__(self) -> str:
        return self.compact_table


def read_samples(run_dir: Path) -> dict[str, list[SampleRecord]]:
    """The sample records a run logged, per task, in (episode, k) order, read back as SampleRecords."""
    from audioeval.results.run_files import read_run

    run = read_run(run_dir)
    return {task: list(run.samples(task)) for task in run.sample_files}
