"""Per-sample details: a run's samples_<task>.jsonl as one parquet file, one row per sample.

Top-level fields that hold one kind of scalar in every line (task, episode, shots, response, target, ...) become
typed columns; fields that hold objects or lists (metadata, messages, scores, gen_kwargs) are JSON strings, so
every task's file has a schema `datasets.load_dataset` reads back as is, whatever the task's metadata looks
like, and `json.loads` returns exactly what the run logged. The file is read twice (once to check every line
and find the columns, once to write), so no task's samples need to fit in memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.errors import DataError

ROW_GROUP_ROWS = 1000

_SCALAR_TYPES = {bool: "bool", int: "int64", float: "float64", str: "string"}


@dataclass
class Details:
    rows: int
    columns: dict[str, str] = field(default_factory=dict)  # column -> bool, int64, float64, string or json


def sample_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, sample) of every non-blank line; DataError naming file:line for a damaged one."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                sample = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                reason = (
                    f"{err.msg}, column {err.colno}" if isinstance(err, json.JSONDecodeError) else "not UTF-8"
                )
                raise DataError(
                    f"{path}:{number}: not a JSON line ({reason}); the samples file is damaged: rerun the "
                    "evaluation with --log_samples to write it again."
                ) from err
            if not isinstance(sample, dict):
                raise DataError(
                    f"{path}:{number}: expected one sample as a JSON object, found {type(sample).__name__}."
                )
            yield number, sample


def column_kinds(path: Path) -> Details:
    """Every field of the file's samples (in first-seen order) with the column type it gets."""
    seen: dict[str, set[str]] = {}
    rows = 0
    for _number, sample in sample_lines(path):
        rows += 1
        for key, value in sample.items():
            kinds = seen.setdefault(key, set())
            if value is not None:
                kinds.add(_SCALAR_TYPES.get(type(value), "json"))
    return Details(rows, {key: _column_kind(kinds) for key, kinds in seen.items()})


def _column_kind(kinds: set[str]) -> str:
    if not kinds:
        return "string"  # null in every line
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds == {"int64", "float64"}:
        return "float64"
    return "json"  # objects, lists, or scalars of several kinds


def write_details(path: Path, out: Path) -> Details:
    """`path`'s samples as parquet at `out`, in the file's order (episode, then k)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    details = column_kinds(path)
    schema = pa.schema(
        [
            (name, pa.string() if kind == "json" else pa.type_for_alias(kind))
            for name, kind in details.columns.items()
        ]
    )
    batch: list[dict[str, Any]] = []
    with pq.ParquetWriter(out, schema) as writer:
        for _number, sample in sample_lines(path):
            batch.append({name: _cell(sample.get(name), kind) for name, kind in details.columns.items()})
            if len(batch) >= ROW_GROUP_ROWS:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or not details.rows:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return details


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    if kind == "float64":
        return float(value)
    return value
