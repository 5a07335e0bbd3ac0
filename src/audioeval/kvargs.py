"""Command-line arguments: `k=v,k2=v2` strings as used by --model_args, --task_args, --gen_kwargs and friends,
and the argument parser every audioeval command uses."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from audioeval.errors import UsageError
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
