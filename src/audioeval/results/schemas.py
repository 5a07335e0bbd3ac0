"""The JSON Schemas of results.json and of one line of samples_<task>.jsonl, generated from the types that
write and read them (RunRecord's `ResultsFile`, SampleRecord) with pydantic. The source tree ships them as
docs/schemas/results.schema.json and docs/schemas/sample.schema.json; after changing a record type, write them
again with

    python -m audioeval.results.schemas docs/schemas
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from audioeval.results.record import results_adapter
from audioeval.results.sample_record import sample_adapter

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def results_schema() -> dict[str, Any]:
    schema: dict[str, Any] = results_adapter().json_schema()
    schema["title"] = "audioeval results.json"
    return {"$schema": DRAFT, **schema}


def sample_schema() -> dict[str, Any]:
    schema: dict[str, Any] = sample_adapter().json_schema()
    schema["title"] = "audioeval sample record (one line of samples_<task>.jsonl)"
    return {"$schema": DRAFT, **schema}


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "results.schema.json": results_schema,
    "sample.schema.json": sample_schema,
}


def schema_text(name: str) -> str:
    """The file `name` as shipped: the schema, indented, with a final newline."""
    return json.dumps(SCHEMAS[name](), indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = folder / name
        path.write_text(schema_text(name), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")):
        print(path)
