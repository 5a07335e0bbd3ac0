"""ADU-Bench's own judge verdict reader (the generic ones are in audioeval.config.verdicts)."""

from __future__ import annotations

from audioeval.config.verdicts import OutOfRange, first_number, register


@register("score_10_or_0")
def score_10_or_0(reply: str) -> float | OutOfRange | None:
    """The first number in the reply, which must be 10 or 0 (ADU-Bench's correctness judge)."""
    number = first_number(reply)
    if number is None:
        return None
    return number if number in (0.0, 10.0) else OutOfRange(number, "10 or 0")
