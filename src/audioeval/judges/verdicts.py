"""Reading a judge's reply. Each reader returns the verdict, or None when the reply has no usable verdict
(a judge failure: counted and reported, never scored as zero)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_RESULT_YES_NO = re.compile(r"result\s*[:：]\s*\**\s*(yes|no)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)")
_RESULT_TEXT = re.compile(r"result\s*[:：][ \t]*(.*)", re.IGNORECASE | re.DOTALL)


def yes_no(reply: str) -> float | None:
    """`Result: YES|NO` (the last one wins) -> 1.0 / 0.0."""
    found = _RESULT_YES_NO.findall(reply or "")
    return (1.0 if found[-1].lower() == "yes" else 0.0) if found else None


def score_0_10(reply: str) -> float | None:
    """The first number in the reply, clamped to 0-10 (ADU-Bench's rule, with the clamp it lacked)."""
    match = _NUMBER.search(reply or "")
    if not match:
        return None
    return float(min(10.0, max(0.0, float(match.group(1)))))


def result_text(reply: str) -> str | None:
    """Everything after the last `Result:` (may be empty: "no transcription found")."""
    matches = list(re.finditer(r"result\s*[:：]", reply or "", flags=re.IGNORECASE))
    if not matches:
        return None
    return reply[matches[-1].end() :].strip()


READERS: dict[str, Callable[[str], Any]] = {
    "yes_no": yes_no,
    "score_0_10": score_0_10,
    "result_text": result_text,
}
