"""Per-sample details: a run's samples_<task>.jsonl as one parquet file, one row per sample.

Each line is read as the SampleRecord the run wrote it from (results/run_files.py: a damaged line is one error
naming file:line and the field), and its row is the record's `to_json()`, so fields this version does not know
are published too. Top-level fields that hold one kind of scalar in every line (task, episode, shots, response,
target, ...) become typed columns; fields that hold objects or lists (metadata, messages, scores, gen_kwargs)
are JSON strings, so every task's file has a schema `datasets.load_dataset` reads back as is, whatever the
task's metadata looks like, and `json.loads` returns exactly what the run logged. The file is read twice (once
to check every line and find the columns, once to write), so no task's samples need to fit in memory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.results.run_files import sample_lines

ROW_GROUP_ROWS = 1000

_SCALAR_TYPES = {bool: "bool", int: "int64", float: "float64", str: "string"}


@dataclass
class Details:
    rows: int
    columns: dict[str, str] = field(default_factory=dict)  # column -> bool, int64, float64, string or json


def rows(path: Path) -> Iterator[dict[str, Any]]:
    """Every sample of the file as the line the run logged (`SampleRecord.to_json`), in the file's order."""
    for _number, _offset, sample in sample_lines(path):
        yield sample.to_json()


def column_kinds(path: Path) -> Details:
    """Every field of the file's samples (in first-seen order) with the column type it gets."""
    seen: dict[str, set[str]] = {}
    count = 0
    for sample in rows(path):
        count += 1
        for key, value in sample.items():
            kinds = seen.setdefault(key, set())
            if value is not None:
                kinds.add(_SCALAR_TYPES.get(type(value), "json"))
    return Details(count, {key: _column_kind(kinds) for key, kinds in seen.items()})


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
        for sample in rows(path):
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
