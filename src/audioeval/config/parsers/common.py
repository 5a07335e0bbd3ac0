"""General-purpose parsers."""

from __future__ import annotations

import re

from audioeval.config.parsers import register

_INT = re.compile(r"[-+]?\d+")


@register("identity")
def identity(response: str) -> str | None:
    text = response.strip()
    return text or None


@register("last_integer")
def last_integer(response: str) -> str | None:
    """The last integer in the response (the usual rule for integer labels)."""
    found = _INT.findall(response)
    return str(int(found[-1])) if found else None


@register("first_integer")
def first_integer(response: str) -> str | None:
    found = _INT.findall(response)
    return str(int(found[0])) if found else None


@register("first_line")
def first_line(response: str) -> str | None:
    for line in response.splitlines():
        if line.strip():
            return line.strip()
    return None
