"""Spoken digits 0-9 from eSpeak NG (`audioeval.audio.speech`, which caches every utterance).

A `DigitVoice` fixes the speaker (an eSpeak voice variant and pitch) and a base speaking rate; like the
several recordings ("takes") per digit of a speaker in a real corpus, `take` shifts the rate a little.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from audioeval.audio.speech import FEMALE_VARIANTS, MALE_VARIANTS, synthesize

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
VARIANTS = MALE_VARIANTS + FEMALE_VARIANTS
BASE_RATES = (140, 160, 180)
PITCHES = (35, 50, 65)
TAKE_RATE_OFFSETS = (-15, -5, 5, 15)


@dataclass(frozen=True)
class DigitVoice:
    variant: str
    rate: int
    pitch: int

    def describe(self) -> dict[str, object]:
        return {"source": "espeak-ng", **asdict(self)}


def draw_voice(rng: np.random.Generator) -> DigitVoice:
    return DigitVoice(
        variant=VARIANTS[int(rng.integers(len(VARIANTS)))],
        rate=BASE_RATES[int(rng.integers(len(BASE_RATES)))],
        pitch=PITCHES[int(rng.integers(len(PITCHES)))],
    )


def speak_digit(digit: int, voice: DigitVoice, take: int = 0, sampling_rate: int = 16000) -> np.ndarray:
    """The word for `digit` (0-9) spoken by `voice`; `take` (0-3) varies the rate slightly."""
    if not 0 <= digit <= 9:
        raise ValueError(f"digit must be 0-9, got {digit}")
    rate = voice.rate + TAKE_RATE_OFFSETS[take % len(TAKE_RATE_OFFSETS)]
    return synthesize(
        DIGIT_WORDS[digit], variant=voice.variant, rate=rate, pitch=voice.pitch, sampling_rate=sampling_rate
    )
