"""Reading a run folder back into the types the run wrote it from: results.json as a RunRecord, each line of
samples_<task>.jsonl as a SampleRecord. Every reader (the viewer, `compare`) goes through here, so a damaged
file is one DataError naming the file, the line and the field, said the same way everywhere.

    run = read_run("out/chance/2026-12-05T10-39-33")
    run.record.sections.results["audioicl_audio_count"]["0-shot"].value("accuracy")
    for sample in run.samples("audioicl_audio_count"):   # read lazily, line by line
        ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.errors import DataError, UsageError
from audioeval.results.outputs import INCOMPLETE_MARKER
from audioeval.results.record import RunRecord
from audioeval.results.sample_record import SampleRecord

RESULTS = "results.json"
# a task name, `<task>@<condition>` for a degraded copy under --augment (`toy@noise_snr=5+reverb=0.3`)
SAMPLE_FILE = re.compile(r"^samples_(?P<task>[A-Za-z0-9_.\-@=+]+?)(?:\.rank(?P<rank>\d+)\.partial)?\.jsonl$")
_RERUN_SAMPLES = (
    "the sample log is damaged or not written by audioeval. Rerun the command with --log_samples to write it "
    "again (answers come from the response cache)."
)
_RERUN_RESULTS = (
    "the file is damaged or not written by audioeval. Rerun the command that made it (answers come from the "
    "response cache)."
)


@dataclass
class RunFiles:
    """A run folder: its record (None for a run that did not finish), why it did not finish (the INCOMPLETE
    marker's text) and its sample files per task (samples_<task>.jsonl, else a killed run's partial files)."""

    path: Path
    record: RunRecord | None
    incomplete: str | None
    sample_files: dict[str, list[Path]]

    @property
    def tasks(self) -> list[str]:
        """Tasks in the order the run evaluated them, then any that only have sample logs."""
        names = list(self.record.configs) if self.record else []
        return names + sorted(t for t in self.sample_files if t not in names)

    def samples(self, task: str | None = None) -> Iterator[SampleRecord]:
        """The logged samples of one task (or of every task, in task order), read lazily; a damaged line is a
        DataError naming file:line and the field."""
        for name in [task] if task is not None else self.tasks:
            for path in self.sample_files.get(name, []):
                for _number, _offset, sample in sample_lines(path):
                    yield sample


def read_run(path: str | Path) -> RunFiles:
    """The run folder at `path`: its results.json read and checked, its sample files found (not yet read).
    Not a run folder, or a file linking out of it: a UsageError or DataError saying what to give instead."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise UsageError(f"{folder}: no such folder. Give a run folder (OUTPUT_PATH/<model>/<timestamp>).")
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder. Give a run folder (OUTPUT_PATH/<model>/<timestamp>).")
    folder = folder.resolve()
    results, marker = folder / RESULTS, folder / INCOMPLETE_MARKER
    if not results.is_file() and not marker.is_file():
        raise UsageError(not_a_run_message(folder))
    files = find_sample_files(folder)
    for file in [results, *(p for paths in files.values() for p in paths)]:
        if file.is_file():
            refuse_links_out(folder, file)
    record = read_results(results) if results.is_file() else None
    incomplete = marker.read_text(encoding="utf-8", errors="replace").strip() if marker.is_file() else None
    return RunFiles(folder, record, incomplete, files)


def read_results(path: Path) -> RunRecord:
    """results.json as a RunRecord; anything else is one DataError naming the file, line and field."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: not valid JSON ({err.msg}).") from err
    if not isinstance(data, dict) or "results" not in data:
        raise DataError(f"{path}: not an audioeval results file (no `results` key).")
    from pydantic import ValidationError

    try:
        return RunRecord.from_json(data)
    except ValidationError as err:
        loc = tuple(err.errors()[0]["loc"])
        line = _line_of(text, loc)
        raise DataError(
            f"{path}{'' if line is None else f':{line}'}: {field_problem(err)}: {_RERUN_RESULTS}"
        ) from err


def sample_lines(path: Path) -> Iterator[tuple[int, int, SampleRecord]]:
    """(line number, byte offset, record) of every record of a sample file. The last line of a killed run's
    partial file, cut mid-write, is left out; any other line that is not a sample record is a DataError
    naming file:line and the field."""
    from pydantic_core import from_json

    partial = path.name.endswith(".partial.jsonl")
    with path.open("rb") as fh:
        offset = 0
        for number, line in enumerate(fh, start=1):
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            try:
                data = from_json(line)  # pydantic's parser: the same values as json.loads, faster
            except ValueError as err:  # not JSON (or not UTF-8)
                if partial and not line.endswith(b"\n"):
                    return
                reason = re.sub(r" at line \d+ column (\d+)$", r", column \1", str(err)).removesuffix(
                    ", column 0"
                )
                raise DataError(f"{path}:{number}: not a JSON line ({reason}); {_RERUN_SAMPLES}") from err
            yield number, start, sample_from_json(data, path, number)


def sample_from_json(data: Any, path: Path, number: int) -> SampleRecord:
    """One parsed line as a SampleRecord, or a DataError naming file:line and the field."""
    from pydantic import ValidationError

    try:
        return SampleRecord.from_json(data)
    except TypeError:
        found = json_kind(data).removeprefix("an ").removeprefix("a ")
        problem = f"expected one sample as a JSON object, found {found}"
    except ValidationError as err:
        problem = field_problem(err)
    raise DataError(f"{path}:{number}: {problem}; {_RERUN_SAMPLES}")


def field_problem(err: Any) -> str:
    """What the first error of a pydantic ValidationError says, in JSON's words: "`messages[0].content` is a
    number, not a list"."""
    first = err.errors()[0]
    where = _dotted(first["loc"])
    kind, value = first["type"], first.get("input")
    expected = _EXPECTED.get(kind)
    if kind == "missing":
        return f"field `{where}` is missing"
    if kind == "value_error":
        return f"`{where}`: {first.get('ctx', {}).get('error', first['msg'])}"
    if expected is not None:
        return f"`{where}` is {json_kind(value)}, not {expected}"
    return f"`{where}` is {json_kind(value)}: {first['msg'][0].lower()}{first['msg'][1:]}"


_EXPECTED = {
    "dict_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true/false",
    "bool_parsing": "true/false",
    "none_required": "null",
}


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if isinstance(value, bool):
        return "true/false"
    kinds = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), f"a {type(value).__name__}")


def _dotted(loc: Any) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """The line of results.json where the field at `loc` is written (each key looked for after its parent's;
    list positions are not counted): good for the indented file a run writes, a guess for one edited by hand."""
    position = 0
    for part in loc:
        if isinstance(part, int):
            continue
        found = text.find(json.dumps(str(part)) + ":", position)
        if found < 0:
            return None
        position = found
    return text.count("\n", 0, position) + 1


def find_sample_files(folder: Path) -> dict[str, list[Path]]:
    """samples_<task>.jsonl per task; for a task without one, its per-rank partial files."""
    final: dict[str, list[Path]] = {}
    partial: dict[str, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        match = SAMPLE_FILE.match(path.name)
        if match and path.is_file():
            (partial if match["rank"] is not None else final).setdefault(match["task"], []).append(path)
    return {**partial, **final}


def inside(folder: Path, path: Path) -> bool:
    """Whether `path`, links followed, is in `folder` itself (a link in a run folder may lead anywhere)."""
    try:
        return path.resolve(strict=True).parent == folder
    except (OSError, RuntimeError):
        return False


def refuse_links_out(folder: Path, path: Path) -> None:
    if not inside(folder, path):
        raise DataError(
            f"{path}: a link leading out of the run folder ({path.resolve()}). Only the files of the run folder "
            "itself are read; copy the file in if it belongs to the run."
        )


def not_a_run_message(folder: Path) -> str:
    """Why `folder` (with neither results.json nor an INCOMPLETE marker) is no run, naming the runs it holds."""
    runs = sorted(p.parent for p in folder.glob("*/results.json")) + sorted(
        p.parent for p in folder.glob("*/*/results.json")
    )
    if runs:
        shown = ", ".join(str(r) for r in runs[:5]) + (" ..." if len(runs) > 5 else "")
        return f"{folder}: not a run folder (no {RESULTS}), but it holds runs: {shown}; give one of them."
    return (
        f"{folder}: not a run folder (no {RESULTS}). Give the folder a run prints after `results:`, i.e. "
        "OUTPUT_PATH/<model>/<timestamp>."
    )
