"""Command-line arguments: `k=v,k2=v2` strings as used by --model_args, --task_args, --gen_kwargs and friends,
and the argument parser every audioeval command uses."""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from audioeval.errors import UsageError, unknown_name_message
from audioeval.redact import redact_message


class FlagParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors (an unknown flag, a bad choice, a value of the wrong type) are a UsageError:
    one line naming the flag, printed like every other error, instead of argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (`{self.prog} --help` lists the flags).")


def coerce_value(text: str) -> Any:
    """Turn a command-line value into int, float, bool or None where it reads as one."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside quotes or brackets."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts


_EXAMPLES = {
    "--model_args": "pretrained=/models/qwen2-audio,dtype=bfloat16",
    "--gen_kwargs": "max_new_tokens=64,temperature=0",
    "--task_args": "prompt_style=general,n_episodes=50",
    "--judge_args": "model=gpt-4o,base_url=http://127.0.0.1:8000/v1",
    "--builder_args": "seed=3,n_episodes=25",
}


def parse_kv(text: str | None, flag: str) -> dict[str, Any]:
    """Parse `k=v,k2=v2`. An empty or missing string gives {}."""
    if text is None or not text.strip():
        return {}
    result: dict[str, Any] = {}
    for item in _split_top_level(text.strip()):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "a").replace(".", "a").replace("-", "a").isalnum():
            example = _EXAMPLES.get(flag, "key=value,key2=value2")
            raise UsageError(
                f"{flag}: cannot read {redact_message(item)!r} in {redact_message(text)!r}. Expected the form key=value,key2=value2 "
                f"(for example {flag} {example})."
            )
        if key in result:
            raise UsageError(f"{flag}: the key {key!r} is given twice in {redact_message(text)!r}.")
        result[key] = coerce_value(value.strip())
    return result


# --- declared arguments ---------------------------------------------------------------------------------------
# A declaration maps each accepted key to the kind of value it takes: "int", "float", "bool", "str" or
# "str|list" (a string or a list of strings); a trailing "?" also allows none, and ">=N" sets a minimum.
_KIND = re.compile(r"^(int|float|bool|str|str\|list)(\?)?(?:>=(-?[0-9.]+))?$")
_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "str|list": "a string or a list of strings",
}


def kind_error(value: Any, kind: str) -> str | None:
    """Why `value` is not of `kind`, or None when it is."""
    match = _KIND.match(kind)
    if match is None:
        raise ValueError(f"bad kind declaration {kind!r}")
    base, optional, minimum = match.groups()
    if value is None:
        return None if optional else f"expects {_WORDS[base]}, got none"
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str | int | float) and not isinstance(value, bool),
        "str|list": isinstance(value, str)
        or (isinstance(value, list) and all(isinstance(v, str) for v in value)),
    }[base]
    if not ok:
        return f"expects {_WORDS[base]}, got {value!r}"
    if minimum is not None and not value >= float(minimum):  # `not >=` also rejects NaN
        shown = int(float(minimum)) if float(minimum).is_integer() else float(minimum)
        return f"must be at least {shown}, got {value!r}"
    return None


def annotation_kind(annotation: Any) -> str | None:
    """The kind of a keyword argument from its annotation (`int`, `float | None`, ...); None when not plain."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    parts = {p.strip() for p in str(text).split("|")}
    optional = "None" in parts
    parts.discard("None")
    if len(parts) != 1 or not parts <= {"int", "float", "bool", "str"}:
        return None
    return parts.pop() + ("?" if optional else "")


def check_declared(values: dict[str, Any], spec: dict[str, str], what: str, error: type[Exception]) -> None:
    """Every key must be declared (close matches are suggested) and of its declared kind."""
    for key, value in values.items():
        if key not in spec:
            raise error(f"{what}: " + unknown_name_message("key", key, spec))
        problem = kind_error(value, spec[key])
        if problem:
            raise error(f"{what}: {key} {problem}.")
