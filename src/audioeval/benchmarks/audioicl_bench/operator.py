"""AudioOperator and AudioOperatorHard: spoken digits joined by percussive "filler" sounds that stand
for arithmetic operators, with the sound-to-operator mapping drawn per episode.

AudioOperator: one filler per episode meaning +, - or x; clips say "a <filler> b" with a, b in 1..9 and
a >= b for subtraction. AudioOperatorHard: two fillers, one meaning x and the other + or -; clips say
"a <f1> b <f2> c", evaluated with the usual precedence, never negative. Each episode has 8 distinct
expressions; the query and the demos are drawn from them without replacement (so at most 7 demos).

AudioOperatorHard's instruction does not say whether x binds tighter than + and -, so the first demo is always
an expression where that matters (a +/- b x c with c > 1: usual precedence and left to right differ), and
every k >= 1 shows which convention the labels follow.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from audioeval.audio.dsp import cap_peak, fade, seconds_to_samples, trim_silence
from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    episode_rng,
    outline_clip,
    slot_rng,
)

OPERATORS = ("+", "-", "*")
VARIANTS = 8
GAP_S = 0.025
FADE_S = 0.003
TOP_DB = 35.0
PAD_S = 0.010


def max_shots(settings: Settings) -> tuple[int, str]:
    return (
        VARIANTS - 1,
        f"the query and the demos are drawn without replacement from the episode's {VARIANTS} expressions",
    )


def evaluate(operands: list[int], ops: list[str]) -> int:
    """a op b [op c] with x binding tighter than + and -."""
    values, pending = [operands[0]], []
    for op, value in zip(ops, operands[1:], strict=True):
        if op == "*":
            values[-1] *= value
        else:
            pending.append(op)
            values.append(value)
    result = values[0]
    for op, value in zip(pending, values[1:], strict=True):
        result = result + value if op == "+" else result - value
    return result


def left_to_right(operands: list[int], ops: list[str]) -> int:
    """a op b [op c] evaluated strictly from left to right."""
    result = operands[0]
    for op, value in zip(ops, operands[1:], strict=True):
        result = result + value if op == "+" else result - value if op == "-" else result * value
    return result


def tells_precedence(operands: list[int], ops: list[str]) -> bool:
    """True when the usual precedence and left-to-right evaluation give different results."""
    return evaluate(operands, ops) != left_to_right(operands, ops)


def expression(operands: list[int], ops: list[str]) -> str:
    return "".join(f"{a}{op}" for a, op in zip(operands, ops, strict=False)) + str(operands[-1])


def candidates(operands: list[int]) -> list[str]:
    """Every result the operands give under any assignment of +, - and x to the slots (chance's label space)."""
    results = sorted(
        {evaluate(operands, list(ops)) for ops in itertools.product(OPERATORS, repeat=len(operands) - 1)}
    )
    return [str(r) for r in results]


def _easy_expressions(op: str, rng: np.random.Generator) -> list[tuple[list[int], list[str]]]:
    pairs = [(a, b) for a in range(1, 10) for b in range(1, 10) if op != "-" or a >= b]
    chosen = rng.permutation(len(pairs))[:VARIANTS]
    return [([pairs[i][0], pairs[i][1]], [op]) for i in chosen]


def _hard_expressions(other: str, rng: np.random.Generator) -> list[tuple[list[int], list[str]]]:
    out: list[tuple[list[int], list[str]]] = []
    seen = set()
    while len(out) < VARIANTS:
        ops = ["*", other] if rng.random() < 0.5 else [other, "*"]
        operands = [int(v) for v in rng.integers(1, 10, size=3)]
        key = (tuple(operands), tuple(ops))
        if key in seen or evaluate(operands, ops) < 0:
            continue
        seen.add(key)
        out.append((operands, ops))
    return out


def _hard_episode(
    other: str, rng: np.random.Generator
) -> tuple[list[tuple[list[int], list[str]]], list[int]]:
    """The 8 expressions and their order (query first, then the demos), with a precedence-telling expression
    as the first demo: expression sets whose 7 demos would all read the same either way are drawn again (the
    query keeps its distribution), and the first telling demo is moved to the front."""
    while True:
        expressions = _hard_expressions(other, rng)
        order = [int(i) for i in rng.permutation(VARIANTS)]
        telling = [j for j in range(1, VARIANTS) if tells_precedence(*expressions[order[j]])]
        if telling:
            break
    order[1], order[telling[0]] = order[telling[0]], order[1]
    return expressions, order


def _part(x: np.ndarray, sr: int) -> np.ndarray:
    return fade(trim_silence(x, sr, TOP_DB, PAD_S), sr, fade_in=FADE_S, fade_out=FADE_S)


RULE = "label = digit, operator meant by the filler sound, digit (x before + and -)"
Expression = tuple[list[int], list[str]]


def _plan(settings: Settings, index: int) -> tuple[Any, dict[int, str], list[Expression], list[int]]:
    """The episode's draws before any rendering: the voice, the filler sounds (key -> operator), the 8
    expressions and their order (query first, then the demos)."""
    rng = episode_rng(settings, index)
    voice = settings.digits.voice(rng)
    if settings.task == "audio_operator_hard":
        mul_key = settings.oneshots.draw(rng)
        other_key = settings.oneshots.draw(rng, avoid=(mul_key,))
        other = "+" if rng.random() < 0.5 else "-"
        expressions, order = _hard_episode(other, rng)
        return voice, {mul_key: "*", other_key: other}, expressions, order
    key = settings.oneshots.draw(rng)
    op = OPERATORS[int(rng.integers(3))]
    expressions = _easy_expressions(op, rng)
    return voice, {key: op}, expressions, [int(i) for i in rng.permutation(VARIANTS)]


def _facts(
    settings: Settings, expression_: Expression, variant: int, spoken: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What a shot tells besides its clip: its expression, label and label space, and (an episode's, not an
    outline's) how each digit was spoken."""
    operands, ops = expression_
    label = str(evaluate(operands, ops))
    return {
        "label": label,
        "operands": operands,
        "operators": ops,
        "expression": expression(operands, ops),
        "variant": variant,
        **({"spoken": spoken} if spoken is not None else {}),
        "candidates": candidates(operands),
        **({"left_to_right": left_to_right(operands, ops)} if settings.task == "audio_operator_hard" else {}),
    }


def outline(settings: Settings, index: int) -> dict[str, Any]:
    """The episode's labels, facts and clip identities without speaking a digit (`EpisodeBuilder.
    episode_outline`): its expressions are distinct, so its clips say different digits and none is a twin."""
    voice, fillers, expressions, order = _plan(settings, index)

    def shot(slot: int, variant: int, role: str) -> dict[str, Any]:
        facts = _facts(settings, expressions[variant], variant)
        label = facts["label"] if role == "demo" else None
        return {"clips": [outline_clip(settings, index, slot, role, label)], **facts}

    query = shot(QUERY_SLOT, order[0], "query")
    demos = [shot(i + 1, order[i + 1], "demo") for i in range(settings.max_shots)]
    return episode(
        settings, index, demos, query, {"rule": RULE, "voice": settings.digits.describe_voice(voice)}
    )


def generate(settings: Settings, index: int) -> dict[str, Any]:
    sr = settings.sampling_rate
    voice, fillers, expressions, order = _plan(settings, index)
    filler_of = {op: key for key, op in fillers.items()}
    filler_audio = {op: _part(settings.oneshots.samples(key, sr), sr) for op, key in filler_of.items()}
    gap = np.zeros(seconds_to_samples(GAP_S, sr), dtype=np.float32)

    def shot(slot: int, variant: int, role: str) -> dict[str, Any]:
        operands, ops = expressions[variant]
        srng = slot_rng(settings, index, slot)
        parts: list[np.ndarray] = []
        spoken = []
        for i, value in enumerate(operands):
            if i:
                parts += [gap, filler_audio[ops[i - 1]], gap]
            audio, info = settings.digits.speak(value, voice, srng, sr)
            parts.append(_part(audio, sr))
            spoken.append({"digit": value, **info})
        samples = cap_peak(np.concatenate(parts), 0.999)
        facts = _facts(settings, expressions[variant], variant, spoken)
        label = facts["label"] if role == "demo" else None
        return {"clips": [clip(role, label, samples, sr)], **facts}

    query = shot(QUERY_SLOT, order[0], "query")
    demos = [shot(i + 1, order[i + 1], "demo") for i in range(settings.max_shots)]
    return episode(
        settings,
        index,
        demos,
        query,
        {
            "rule": RULE,
            "operator_of_filler": [
                {"sound": settings.oneshots.describe(k), "operator": op} for k, op in fillers.items()
            ],
            "voice": settings.digits.describe_voice(voice),
            "gap_s": GAP_S,
        },
    )
