"""A run folder as the viewer reads it: results.json, the sample logs and the report files.

Only the summaries of the sample records stay in memory; a record is read back from its file offset when a
page asks for it, so a run of many thousand samples opens quickly and stays small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from audioeval.errors import DataError
from audioeval.results.record import RunRecord, TaskRecord
from audioeval.results.run_files import inside, read_run, sample_from_json, sample_lines
from audioeval.results.sample_record import SampleRecord
from audioeval.viewer.samples import summarise

# Report outputs the overview links to or shows; anything else in the folder is never served.
_SPOKEN_SHA = re.compile(r"^[0-9a-f]{64}$")  # a spoken answer's audio file: spoken/<sha256>.wav
SERVABLE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".md", ".json", ".csv", ".txt")


@dataclass(frozen=True, order=True)
class SampleKey:
    task: str
    episode: int
    k: int

    def __str__(self) -> str:
        return f"{self.task}/{self.episode}/{self.k}"


@dataclass(frozen=True)
class _Where:
    path: Path
    offset: int
    line: int


class RunFolder:
    """One run: its record (None for a run that did not finish), sample summaries and report files."""

    def __init__(self, path: Path, record: RunRecord | None, incomplete: str | None) -> None:
        self.path = path
        self.record = record
        self.incomplete = incomplete
        self.summaries: list[dict[str, Any]] = []
        self._where: dict[SampleKey, _Where] = {}
        self._episodes_of: dict[str, set[int]] = {}

    # --- opening ----------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        files = read_run(path)
        run = cls(files.path, files.record, files.incomplete)
        for paths in files.sample_files.values():
            run._index(paths)
        order = {t: i for i, t in enumerate(run.tasks)}
        run.summaries.sort(key=lambda s: (order.get(s["task"], len(order)), s["episode"], s["k"]))
        return run

    def _index(self, files: list[Path]) -> None:
        for path in files:
            for number, offset, record in sample_lines(path):
                key = SampleKey(record.task, record.episode, record.shots)
                if key in self._where:
                    continue
                self._where[key] = _Where(path, offset, number)
                self.summaries.append(summarise(record))

    def keep(self, wanted: Callable[[dict[str, Any]], bool]) -> None:
        """Keep only the samples whose summary `wanted` accepts (an export of part of a run)."""
        self.summaries = [s for s in self.summaries if wanted(s)]
        kept = {SampleKey(s["task"], s["episode"], s["k"]) for s in self.summaries}
        self._where = {key: where for key, where in self._where.items() if key in kept}
        self._episodes_of.clear()
        self.__dict__.pop("tasks", None)

    # --- what the pages need ----------------------------------------------------------------------------
    @property
    def has_samples(self) -> bool:
        return bool(self._where)

    @cached_property
    def tasks(self) -> list[str]:
        """Tasks in the order the run evaluated them, then any that only have sample logs."""
        names = list(self.configs)
        for key in sorted(self._where):
            if key.task not in names:
                names.append(key.task)
        return names

    @property
    def configs(self) -> dict[str, TaskRecord]:
        return self.record.configs if self.record else {}

    @property
    def model(self) -> str:
        return self.record.model.label if self.record else self.path.parent.name

    @property
    def label(self) -> str:
        return f"{self.model} · {self.path.name}"

    def task_config(self, task: str) -> TaskRecord | None:
        return self.configs.get(task)

    def logged(self, task: str, episode: int) -> bool:
        """Whether the sample logs hold some k of this episode."""
        return episode in self._episodes_of.setdefault(
            task, {k.episode for k in self._where if k.task == task}
        )

    def sample(self, key: SampleKey) -> SampleRecord | None:
        where = self._where.get(key)
        if where is None:
            return None
        with where.path.open("rb") as fh:
            fh.seek(where.offset)
            line = fh.readline()
        try:
            data = json.loads(line)
        except ValueError as err:
            raise DataError(
                f"{where.path}:{where.line}: the sample log changed since the viewer opened it ({err}). Restart "
                "`audioeval view` to read it again."
            ) from err
        return sample_from_json(data, where.path, where.line)

    def spoken_file(self, sha256: str) -> Path | None:
        """A spoken answer's audio, `spoken/<sha256>.wav` in the run folder; None when it is not there."""
        if not _SPOKEN_SHA.match(sha256):
            return None
        path = self.path / "spoken" / f"{sha256}.wav"
        try:
            resolved = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        return (
            resolved if resolved.parent == (self.path / "spoken").resolve() and resolved.is_file() else None
        )

    def file(self, name: str) -> Path | None:
        """A report file directly in the run folder, by name; None for anything else (other folders, links
        leading out of the run folder, files the viewer does not show)."""
        if not name or "/" in name or "\\" in name or name.startswith(".") or "\x00" in name:
            return None
        if not name.lower().endswith(SERVABLE_SUFFIXES) or name.startswith("samples_"):
            return None
        path = self.path / name
        if not inside(self.path, path) or not path.is_file():
            return None
        return path.resolve()

    def report_files(self) -> list[Path]:
        """The files the run's reports wrote (as listed in results.json), that are still in the folder."""
        out: list[Path] = []
        for listed in (self.record.reports if self.record else None) or []:
            path = self.file(Path(str(listed)).name)
            if path is not None and path not in out:
                out.append(path)
        return out
