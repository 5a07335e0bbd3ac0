"""Reading a judge's reply. Each reader returns the verdict (a number, averaged over swapped orders, or a
text), None when the reply has no usable verdict, or an `OutOfRange` when the judge answered with a number
outside the scale it was asked for. The last two are judge failures: counted and reported, never scored (not
as zero, not clamped into the scale).

A judge role's `verdict:` names a reader: registered with `@register("name")` (the generic ones here, a
benchmark's own in its wing's `verdicts` module), `module:function` or `./file.py:function` beside the task
YAML (see audioeval.hooks)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from audioeval.hooks import HookKind

_RESULT_YES_NO = re.compile(r"result\s*[:：]\s*\**\s*(yes|no)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class OutOfRange:
    """A numeric verdict outside the scale the judge was asked to use (e.g. "15" or "-3" on 0-10)."""

    number: float
    scale: str

    def __str__(self) -> str:
        return f"verdict {self.number:g} is outside the scale ({self.scale})"


#: `(reply) -> number or text verdict`; None when the reply holds none, OutOfRange off the scale
VerdictReader = Callable[[str], float | str | OutOfRange | None]
VERDICTS: HookKind[VerdictReader] = HookKind(
    "verdict reader", core_modules=("audioeval.config.verdicts",), wing_module="verdicts"
)
register = VERDICTS.register


@register("yes_no")
def yes_no(reply: str) -> float | None:
    """`Result: YES|NO` (the last one wins) -> 1.0 / 0.0."""
    found = _RESULT_YES_NO.findall(reply or "")
    return (1.0 if found[-1].lower() == "yes" else 0.0) if found else None


def first_number(reply: str) -> float | None:
    match = _NUMBER.search(reply or "")
    return float(match.group(1)) if match else None


@register("score_0_10")
def score_0_10(reply: str) -> float | OutOfRange | None:
    """The first number in the reply, which must lie in 0-10."""
    number = first_number(reply)
    if number is None:
        return None
    return number if 0.0 <= number <= 10.0 else OutOfRange(number, "0 to 10")


@register("result_text")
def result_text(reply: str) -> str | None:
    """Everything after the last `Result:` (may be empty: "no transcription found")."""
    matches = list(re.finditer(r"result\s*[:：]", reply or "", flags=re.IGNORECASE))
    if not matches:
        return None
    return reply[matches[-1].end() :].strip()
