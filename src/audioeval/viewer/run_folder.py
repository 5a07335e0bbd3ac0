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

from audioeval.errors import DataError, UsageError
from audioeval.viewer.samples import json_kind, record_problem, summarise

RESULTS = "results.json"
# Left in the folder while a run is in progress and by a run that did not finish (killed, interrupted, failed).
INCOMPLETE = "INCOMPLETE"
_SAMPLE_FILE = re.compile(r"^samples_(?P<task>[A-Za-z0-9_.\-]+?)(?:\.rank(?P<rank>\d+)\.partial)?\.jsonl$")
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
    """One run: its results (None for a run that did not finish), sample summaries and report files."""

    def __init__(self, path: Path, results: dict[str, Any] | None, incomplete: str | None) -> None:
        self.path = path
        self.results = results
        self.incomplete = incomplete
        self.summaries: list[dict[str, Any]] = []
        self._where: dict[SampleKey, _Where] = {}
        self._episodes_of: dict[str, set[int]] = {}

    # --- opening ----------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        folder = Path(path).expanduser()
        if not folder.exists():
            raise UsageError(
                f"{folder}: no such folder. Give a run folder (OUTPUT_PATH/<model>/<timestamp>)."
            )
        if not folder.is_dir():
            raise UsageError(f"{folder}: not a folder. Give a run folder (OUTPUT_PATH/<model>/<timestamp>).")
        folder = folder.resolve()
        results_path = folder / RESULTS
        marker = folder / INCOMPLETE
        sample_files = _sample_files(folder)
        if not results_path.is_file() and not marker.is_file():
            raise UsageError(_not_a_run_message(folder))
        for path in [results_path, *(p for files in sample_files.values() for p in files)]:
            if path.is_file():
                _refuse_links_out(folder, path)
        results = _read_results(results_path) if results_path.is_file() else None
        incomplete = (
            marker.read_text(encoding="utf-8", errors="replace").strip() if marker.is_file() else None
        )
        run = cls(folder, results, incomplete)
        for task, files in sample_files.items():
            run._index(task, files)
        order = {t: i for i, t in enumerate(run.tasks)}
        run.summaries.sort(key=lambda s: (order.get(s["task"], len(order)), s["episode"], s["k"]))
        return run

    def _index(self, task: str, files: list[Path]) -> None:
        for path in files:
            partial = path.name.endswith(".partial.jsonl")
            with path.open("rb") as fh:
                offset = 0
                for number, line in enumerate(fh, start=1):
                    start, offset = offset, offset + len(line)
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                        key = SampleKey(str(record["task"]), int(record["episode"]), int(record["shots"]))
                    except (ValueError, KeyError, TypeError) as err:
                        if partial and not line.endswith(b"\n"):
                            break  # the last line of a killed run's log, cut mid-write
                        raise DataError(
                            f"{path}:{number}: not a sample record ({type(err).__name__}: {err}). Sample logs hold "
                            "one JSON object per line with task, episode and shots."
                        ) from err
                    _check_record(record, path, number)
                    if key in self._where:
                        continue
                    self._where[key] = _Where(path, start, number)
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
        names = list((self.results or {}).get("configs") or {})
        for key in sorted(self._where):
            if key.task not in names:
                names.append(key.task)
        return names

    @property
    def model(self) -> str:
        model = (self.results or {}).get("model") or {}
        args = model.get("model_args") or {}
        for key in ("pretrained", "model", "asr"):
            if args.get(key):
                return f"{model.get('name')} ({Path(str(args[key])).name})"
        return str(model.get("name") or self.path.parent.name)

    @property
    def label(self) -> str:
        return f"{self.model} · {self.path.name}"

    def task_config(self, task: str) -> dict[str, Any] | None:
        return ((self.results or {}).get("configs") or {}).get(task)

    def logged(self, task: str, episode: int) -> bool:
        """Whether the sample logs hold some k of this episode."""
        return episode in self._episodes_of.setdefault(
            task, {k.episode for k in self._where if k.task == task}
        )

    def record(self, key: SampleKey) -> dict[str, Any] | None:
        where = self._where.get(key)
        if where is None:
            return None
        with where.path.open("rb") as fh:
            fh.seek(where.offset)
            line = fh.readline()
        try:
            record = json.loads(line)
        except ValueError as err:
            raise DataError(
                f"{where.path}:{where.line}: the sample log changed since the viewer opened it ({err}). Restart "
                "`audioeval view` to read it again."
            ) from err
        _check_record(record, where.path, where.line)
        return record

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
        for listed in (self.results or {}).get("reports") or []:
            path = self.file(Path(str(listed)).name)
            if path is not None and path not in out:
                out.append(path)
        return out


def _check_record(record: Any, path: Path, line: int) -> None:
    problem = record_problem(record)
    if problem is not None:
        raise DataError(
            f"{path}:{line}: {problem}; the sample log is damaged or not written by audioeval. Rerun the command "
            "with --log_samples to write it again (answers come from the response cache)."
        )


def _sample_files(folder: Path) -> dict[str, list[Path]]:
    """samples_<task>.jsonl per task; for a task without one, its per-rank partial files."""
    final: dict[str, list[Path]] = {}
    partial: dict[str, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        match = _SAMPLE_FILE.match(path.name)
        if match and path.is_file():
            (partial if match["rank"] is not None else final).setdefault(match["task"], []).append(path)
    return {**partial, **final}


def _read_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: not valid JSON ({err.msg}).") from err
    if not isinstance(data, dict) or "results" not in data:
        raise DataError(f"{path}: not an audioeval results file (no `results` key).")
    for key, kind in _RESULTS_SHAPE.items():
        value = data.get(key)
        if value is not None and not isinstance(value, kind):
            raise DataError(
                f"{path}: `{key}` is {json_kind(value)}, not {json_kind(kind())}: the file is damaged or not written by "
                "audioeval. Rerun the command that made it (answers come from the response cache)."
            )
    for task, entry in (data.get("configs") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("config", {}), dict):
            raise DataError(f"{path}: `configs.{task}` is damaged (not an object with a `config` object).")
    return data


# The fields of results.json the viewer reads, and what each must be.
_RESULTS_SHAPE: dict[str, type] = {
    "results": dict,
    "groups": dict,
    "configs": dict,
    "model": dict,
    "timing": dict,
    "versions": dict,
    "reports": list,
}


def inside(folder: Path, path: Path) -> bool:
    """Whether `path`, links followed, is in `folder` itself (a link in a run folder may lead anywhere)."""
    try:
        return path.resolve(strict=True).parent == folder
    except (OSError, RuntimeError):
        return False


def _refuse_links_out(folder: Path, path: Path) -> None:
    if not inside(folder, path):
        raise DataError(
            f"{path}: a link leading out of the run folder ({path.resolve()}). The viewer reads only the files of "
            "the run folder itself; copy the file in if it belongs to the run."
        )


def _not_a_run_message(folder: Path) -> str:
    runs = sorted(p.parent for p in folder.glob("*/results.json")) + sorted(
        p.parent for p in folder.glob("*/*/results.json")
    )
    message = (
        f"{folder} is not an audioeval run folder: it has no {RESULTS}. Give the folder a run prints after "
        "`results:`, i.e. OUTPUT_PATH/<model>/<timestamp>."
    )
    if runs:
        shown = ", ".join(str(r) for r in runs[:5]) + (" ..." if len(runs) > 5 else "")
        message += f" Run folders under it: {shown}."
    return message
