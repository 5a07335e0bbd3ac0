"""Everything a run writes: the run folder, per-sample JSONL files, results.json and the summary table."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from audioeval.errors import UsageError
from audioeval.redact import redact, redact_message, redact_text
from audioeval.results.blocks import PerK
from audioeval.results.sample_record import SampleRecord
from audioeval.results.units import PERCENT_NOTE, is_proportion, score_values, show

# Present while a run is in progress and left behind by a run that did not finish (killed, interrupted, failed):
# such a folder's results.json is missing or stale, and samples_*.rank*.partial.jsonl hold what was logged.
INCOMPLETE_MARKER = "INCOMPLETE"
_INCOMPLETE_TEXT = (
    "This run has not finished: it is still running, or it was killed, interrupted or failed{reason}.\n"
    "results.json and summary.md are written only at the end; samples_<task>.rank<N>.partial.jsonl hold the\n"
    "samples logged so far. Every answer received is in the response cache: run the same command again to\n"
    "resume (a new run folder is made). A finished run removes this file.\n"
)

# Per-sample fields that legitimately differ between two runs of the same evaluation.
VOLATILE_SAMPLE_FIELDS = ("latency_s", "cached")


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "__", text).strip("_") or "model"


def make_run_dir(output_path: str | Path, model_name: str) -> Path:
    """--output_path/<model>/<timestamp>/, created now so an unwritable path fails before any work. Each run
    claims a folder of its own: runs started in the same second into the same --output_path (a sweep, two
    terminals) get <timestamp>_2, _3, ... whichever creates its folder first, and never share one."""
    stamp = time.strftime("%Y-%m-%dT%H-%M-%S")
    base = Path(output_path).expanduser() / safe_name(model_name)
    suffix = 1
    try:
        base.mkdir(parents=True, exist_ok=True)
        while True:
            run_dir = base / (stamp if suffix == 1 else f"{stamp}_{suffix}")
            try:
                run_dir.mkdir()  # atomic: of two runs creating the same name, one gets FileExistsError
                break
            except FileExistsError:
                suffix += 1
        (run_dir / INCOMPLETE_MARKER).write_text(_INCOMPLETE_TEXT.format(reason=""))
    except OSError as err:
        raise UsageError(
            f"--output_path {output_path}: cannot write there ({err.strerror or err}). Choose a writable folder."
        ) from err
    return run_dir


def mark_failed(run_dir: Path, reason: str) -> None:
    """Say in the run folder's marker why the run stopped."""
    try:
        (run_dir / INCOMPLETE_MARKER).write_text(
            _INCOMPLETE_TEXT.format(reason=f" ({redact_message(reason)})")
        )
    except OSError:
        pass


def mark_finished(run_dir: Path) -> None:
    """A finished run keeps no marker and no per-rank partial sample files."""
    for debris in run_dir.glob("*.partial.jsonl"):
        debris.unlink(missing_ok=True)
    (run_dir / INCOMPLETE_MARKER).unlink(missing_ok=True)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    return str(obj)


def _clean(obj: Any) -> Any:
    """NaN -> None so results.json is valid JSON."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def write_json(path: Path, data: Any) -> None:
    """Written atomically, NaN as null, with URL secrets masked (redact.py)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        json.dumps(redact(_clean(data)), indent=2, sort_keys=False, default=_json_default, allow_nan=False)
        + "\n"
    )
    os.replace(tmp, path)


def write_text(path: Path, text: str) -> None:
    """A text file of the run (summary.md, robustness.md), with secrets masked (redact.py)."""
    path.write_text(redact_text(text), encoding="utf-8")


def mask_written_file(path: Path) -> None:
    """Mask secrets in a text file another writer made (a benchmark's report); binary files stay as they are."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return
    masked = redact_text(text)
    if masked != text:
        path.write_text(masked, encoding="utf-8")


class SampleLog:
    """Per-rank JSONL of sample records, appended and flushed as samples complete (in completion order);
    merged by rank 0 at the end into one file in (episode, k) order."""

    def __init__(self, run_dir: Path, task: str, rank: int) -> None:
        self.final_path = run_dir / f"samples_{task}.jsonl"
        self.part_path = run_dir / f"samples_{task}.rank{rank}.partial.jsonl"
        self._fh: IO[str] | None = self.part_path.open("w", encoding="utf-8")

    def write(self, records: list[SampleRecord]) -> None:
        assert self._fh is not None
        for r in records:
            line = json.dumps(redact(_clean(r.to_json())), ensure_ascii=False, default=_json_default)
            self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    @staticmethod
    def merge(run_dir: Path, task: str, world_size: int) -> Path:
        """Merge the rank files into samples_<task>.jsonl, sorted by (episode, k). Only the keys and file
        offsets are held in memory, never the records."""
        parts = [run_dir / f"samples_{task}.rank{r}.partial.jsonl" for r in range(world_size)]
        missing = [p.name for p in parts if not p.exists()]
        if missing:
            raise UsageError(
                f"{run_dir}: the sample files {', '.join(missing)} of the other processes are not there. With "
                "several machines, put --output_path on a filesystem they all share."
            )
        final = run_dir / f"samples_{task}.jsonl"
        handles = [p.open("rb") for p in parts]
        try:
            index = sorted(
                (key, part, offset) for part, h in enumerate(handles) for key, offset in _keyed_offsets(h)
            )
            with final.open("wb") as out:
                for _key, part, offset in index:
                    handles[part].seek(offset)
                    out.write(handles[part].readline())
        finally:
            for h in handles:
                h.close()
        for p in parts:
            p.unlink(missing_ok=True)
        return final


def _keyed_offsets(handle: IO[bytes]) -> Any:
    """((episode, shots), offset) of every record in a sample file."""
    offset = 0
    for line in handle:
        record = json.loads(line)
        yield (record["episode"], record["shots"]), offset
        offset += len(line)


def git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def library_versions() -> dict[str, str | None]:
    from importlib import metadata

    from audioeval.version import __version__

    versions: dict[str, str | None] = {"audioeval": __version__}
    for dist in ("torch", "transformers", "datasets", "evaluate", "accelerate"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    return versions


def _fmt_ci(ci: tuple[float, float] | None, proportion: bool) -> str:
    return "—" if ci is None else f"[{show(ci[0], proportion, False)}, {show(ci[1], proportion, False)}]"


def markdown_table(results: dict[str, PerK], groups: dict[str, PerK]) -> str:
    """One row per task, k and metric: value, stderr, CI ("—" where none was measured), the samples scored and
    the samples whose request failed; proportions in % (results/units.py). A k where nothing could be scored
    still gets a row, with its errors."""
    lines = [
        "| task | k | metric | value | ± stderr | 95% CI | n | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def rows(name: str, per_k: PerK, label: str) -> None:
        metrics = {m for block in per_k.values() for m in block.metrics}
        proportions = {m: is_proportion(score_values(per_k.values(), m)) for m in metrics}
        for shot_key, block in per_k.items():
            k = shot_key.split("-")[0]
            for metric, s in block.metrics.items():
                p = proportions[metric]
                lines.append(
                    f"| {label}{name} | {k} | {metric} | {show(s.value, p)} | {show(s.stderr, p, False)} | "
                    f"{_fmt_ci(s.ci95, p)} | {block.scored(metric)} | {block.errors} |"
                )
            if not block.metrics:
                lines.append(f"| {label}{name} | {k} | — | — | — | — | 0 | {block.errors} |")

    for task, per_k in results.items():
        rows(task, per_k, "")
    for group, per_k in groups.items():
        rows(group, per_k, "group: ")
    lines += ["", f"Values: {PERCENT_NOTE}; other scores in their own units. results.json keeps fractions."]
    return "\n".join(lines)
