"""MorseCode and the single-letter ablation: Morse tones at a fixed speed and pitch, preceded by the
A-Z reference bank (each letter's tone labelled with the letter) as context clips.

MorseCode: words from the word list; the query and demos are distinct words. MorseLetter: the query is
one letter (demos, when asked for, are other letters), keyed exactly like its bank entry, so the two clips are
byte-identical. With shortcut_free the MorseLetter query is keyed 5-15% faster or slower than the bank (same
tone, same dot/dash/gap ratios), so it has to be decoded rather than matched byte for byte, and its letter is
drawn independently of the demos' (which stay distinct), so it may be one of theirs.
"""

from __future__ import annotations

import dataclasses
import string
from typing import Any

from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    episode_rng,
    slot_rng,
)
from audioeval.benchmarks.audioicl_bench.sounds import morse

CANDIDATES = 32
SPEED_CHANGE = (0.05, 0.15)  # shortcut_free MorseLetter query: relative speed change, either direction


def max_shots(settings: Settings) -> tuple[int, str]:
    if settings.task == "morse_letter":
        return 25, "the query and the demos are distinct letters of A-Z"
    return len(
        settings.words
    ) - 1, f"the query and the demos are distinct words of the {len(settings.words)}-word list"


def bank(settings: Settings) -> list[dict[str, Any]]:
    sr = settings.sampling_rate
    return [clip("letter", c, morse.render(c, settings.morse, sr), sr) for c in string.ascii_uppercase]


def generate(settings: Settings, index: int) -> dict[str, Any]:
    sr = settings.sampling_rate
    rng = episode_rng(settings, index)
    letters_only = settings.task == "morse_letter"
    pool = tuple(string.ascii_uppercase) if letters_only else settings.words
    order = [int(i) for i in rng.permutation(len(pool))]

    def shot(position: int, role: str, style: morse.MorseStyle = settings.morse) -> dict[str, Any]:
        text = pool[position]
        return {
            "clips": [clip(role, text if role == "demo" else None, morse.render(text, style, sr), sr)],
            "label": text,
            "code": morse.encode(text),
            **({"wpm": round(style.wpm, 4)} if style is not settings.morse else {}),
        }

    query_style, query_position = settings.morse, order[0]
    if letters_only and settings.shortcut_free:
        srng = slot_rng(settings, index, QUERY_SLOT)
        change = float(srng.uniform(*SPEED_CHANGE)) * (1 if srng.random() < 0.5 else -1)
        query_style = dataclasses.replace(settings.morse, wpm=settings.morse.wpm * (1 + change))
        query_position = int(srng.integers(len(pool)))
    query = shot(query_position, "query", query_style)
    if letters_only:
        query["candidates"] = list(string.ascii_uppercase)
    else:
        others = [pool[i] for i in order[1:]]
        crng = slot_rng(settings, index, QUERY_SLOT)
        sample = [query["label"], *(others[int(i)] for i in crng.permutation(len(others))[: CANDIDATES - 1])]
        query["candidates"] = [sample[int(i)] for i in crng.permutation(len(sample))]
    demos = [shot(order[i + 1], "demo") for i in range(settings.max_shots)]
    return episode(
        settings,
        index,
        demos,
        query,
        {
            "rule": "label = the text the Morse tones spell (letters as in the A-Z bank)",
            "morse": settings.morse.describe(),
        },
        context=bank(settings),
    )
