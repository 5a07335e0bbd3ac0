"""A small JSON Schema (2020-12) checker for the keywords audioeval's generated schemas use; `keywords(schema)`
lists those a schema uses, so a test can first prove this checker understands every one of them."""

from __future__ import annotations

import re
from typing import Any

# keywords that constrain values, and those that only describe
CHECKED = {
    "$ref", "type", "properties", "required", "additionalProperties", "patternProperties", "items", "anyOf",
    "oneOf", "const", "enum", "minItems", "maxItems", "minimum",
}  # fmt: skip
DESCRIPTIVE = {"$schema", "$defs", "title", "description", "default", "discriminator"}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in the schema (property names under `properties` are not keywords)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key in ("properties", "patternProperties", "$defs"):
                for inner in value.values():
                    found |= keywords(inner)
            elif key not in ("const", "enum", "default", "discriminator", "required"):
                found |= keywords(value)
    elif isinstance(schema, list):
        for inner in schema:
            found |= keywords(inner)
    return found


def problems(value: Any, schema: Any, root: dict[str, Any] | None = None, where: str = "$") -> list[str]:
    """What in `value` breaks `schema` (empty: it conforms)."""
    root = root if root is not None else schema
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{where}: not allowed"]
    out: list[str] = []
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        out += problems(value, root["$defs"][name], root, where)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[k](value) for k in kinds):
            return [*out, f"{where}: {value!r} is not {kinds}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and isinstance(value, int | float) and value < schema["minimum"]:
        out.append(f"{where}: {value} < {schema['minimum']}")
    if "anyOf" in schema and all(problems(value, s, root, where) for s in schema["anyOf"]):
        out.append(f"{where}: matches none of anyOf")
    if "oneOf" in schema and sum(not problems(value, s, root, where) for s in schema["oneOf"]) != 1:
        out.append(f"{where}: does not match exactly one of oneOf")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            out.append(f"{where}: {len(value)} items")
        if "items" in schema:
            for i, item in enumerate(value):
                out += problems(item, schema["items"], root, f"{where}[{i}]")
    if isinstance(value, dict):
        out += [f"{where}: `{key}` is missing" for key in schema.get("required", []) if key not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                out += problems(item, schema["properties"][key], root, f"{where}.{key}")
                continue
            patterns = [s for p, s in schema.get("patternProperties", {}).items() if re.search(p, key)]
            for inner in patterns:
                out += problems(item, inner, root, f"{where}.{key}")
            if not patterns and "additionalProperties" in schema:
                out += problems(item, schema["additionalProperties"], root, f"{where}.{key}")
    return out
