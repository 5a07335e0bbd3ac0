"""The tables in docs/*.md that are generated from declarations (config/fields.py), between markers:

    <!-- task-schema:start --> ... <!-- task-schema:end -->           (also group-schema, parameter-schema)
    <!-- args:model:openai:start --> ... <!-- args:model:openai:end -->   a backend's --model_args
    <!-- args:asr:openai:start --> ... <!-- args:asr:openai:end -->       an ASR's --asr_args
    <!-- args:model:hf[audio_output,speaker]:start --> ...                some of them

tests/core/test_doc_tables.py fails when a table drifts; `python -m audioeval.models.doc_tables docs/*.md`
rewrites them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from audioeval.config.fields import argument_rows, markdown_table
from audioeval.config.task import group_schema_markdown, parameter_schema_markdown, schema_markdown
from audioeval.models.base import Model, declared_args

_SCHEMAS: dict[str, Callable[[], str]] = {
    "task-schema": schema_markdown,
    "group-schema": group_schema_markdown,
    "parameter-schema": parameter_schema_markdown,
}
_MARKER = re.compile(
    r"<!-- (?P<name>[\w:.,\[\]-]+):start -->\n(?P<body>.*?)<!-- (?P=name):end -->", re.DOTALL
)
_ARGS = re.compile(r"args:(?P<kind>model|asr):(?P<backend>[\w.-]+)(?:\[(?P<only>[\w,]+)\])?")


def _backend(kind: str, name: str) -> type[Model]:
    if kind == "asr":
        from audioeval.models.speech.asr import asr_class

        return asr_class(name)
    from audioeval.models.registry import get_model_class

    return get_model_class(name)


def table(marker: str) -> str:
    """The table a marker names."""
    if marker in _SCHEMAS:
        return _SCHEMAS[marker]()
    match = _ARGS.fullmatch(marker)
    if match is None:
        raise ValueError(f"no generated table is named {marker!r}")
    arguments = declared_args(_backend(match["kind"], match["backend"]))
    if match["only"]:
        arguments = {n: arguments[n] for n in match["only"].split(",")}
    return markdown_table((f"{match['kind']}_arg", "type", "default", "meaning"), argument_rows(arguments))


def render(text: str) -> str:
    """The text with every marked table generated afresh."""
    return _MARKER.sub(
        lambda m: f"<!-- {m['name']}:start -->\n{table(m['name'])}\n<!-- {m['name']}:end -->", text
    )


def markers(text: str) -> list[str]:
    return [m["name"] for m in _MARKER.finditer(text)]


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        path = Path(arg)
        path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
