"""MorseCode and the single-letter ablation: Morse tones at a fixed speed and pitch, preceded by the
A-Z reference bank (each letter's tone labelled with the letter) as context clips.

MorseCode: words from the word list; the query and demos are distinct words. MorseLetter: the query is
one letter (demos, when asked for, are other letters).
"""

from __future__ import annotations

import string
from typing import Any

from audioeval.audio import morse
from audioeval.audioicl.common import QUERY_SLOT, Settings, clip, episode, episode_rng, slot_rng

CANDIDATES = 32


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

    def shot(position: int, role: str) -> dict[str, Any]:
        text = pool[order[position]]
        return {
            "clips": [
                clip(role, text if role == "demo" else None, morse.render(text, settings.morse, sr), sr)
            ],
            "label": text,
            "code": morse.encode(text),
        }

    query = shot(0, "query")
    if letters_only:
        query["candidates"] = list(string.ascii_uppercase)
    else:
        others = [pool[i] for i in order[1:]]
        crng = slot_rng(settings, index, QUERY_SLOT)
        sample = [query["label"], *(others[int(i)] for i in crng.permutation(len(others))[: CANDIDATES - 1])]
        query["candidates"] = [sample[int(i)] for i in crng.permutation(len(sample))]
    demos = [shot(i + 1, "demo") for i in range(settings.max_shots)]
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
