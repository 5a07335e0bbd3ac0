"""Reading JSONL files line by line with every error naming the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from audioeval.errors import DataError


def read_jsonl(path: Path) -> Iterator[tuple[str, Any]]:
    """(`file:line`, decoded object) for every non-blank line; invalid JSON is a DataError at its line."""
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{where}: not valid JSON ({err.msg} at column {err.colno}).") from err
