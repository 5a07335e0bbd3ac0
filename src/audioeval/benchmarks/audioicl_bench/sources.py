"""Sound sources behind the tasks: the built-in procedural ones, or a real corpus when its folder is given.

Each source draws with the generator it is handed and never keeps state between calls, so episodes stay
pure functions of their seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from audioeval.audio import distractors
from audioeval.audio.dsp import cap_peak, fade, fit_length, trim_silence
from audioeval.benchmarks.audioicl_bench.sounds import percussion
from audioeval.benchmarks.audioicl_bench.sounds.corpora import (
    DistractorCorpus,
    MachineCorpus,
    OneShotCorpus,
    SpokenDigitCorpus,
)
from audioeval.benchmarks.audioicl_bench.sounds.digits import DigitVoice, draw_voice, speak_digit


@dataclass(frozen=True)
class OneShots:
    """Percussive one-shots: the procedural bank, or One-Shot Percussive Sounds files."""

    corpus: OneShotCorpus | None = None

    def draw(self, rng: np.random.Generator, avoid: tuple[int, ...] = ()) -> int:
        """A sound key. Sounds in `avoid` (and, for the bank, their families) are not drawn."""
        if self.corpus is None:
            families = tuple(percussion.family_of(k) for k in avoid)
            return percussion.draw_index(rng, exclude_families=families)
        while True:
            key = int(rng.integers(len(self.corpus)))
            if key not in avoid:
                return key

    def samples(self, key: int, sampling_rate: int) -> np.ndarray:
        if self.corpus is None:
            return percussion.render(key, sampling_rate)
        raw = self.corpus.load(key, sampling_rate)
        trimmed = trim_silence(cap_peak(raw, 0.999), sampling_rate, top_db=60.0, pad=0.005)
        return fade(trimmed, sampling_rate, fade_out=0.005)

    def describe(self, key: int) -> dict[str, Any]:
        return percussion.timbre(key).describe() if self.corpus is None else self.corpus.describe(key)


@dataclass(frozen=True)
class Digits:
    """Spoken digits: eSpeak NG voices, or one Free Spoken Digit Dataset speaker."""

    corpus: SpokenDigitCorpus | None = None

    def voice(self, rng: np.random.Generator) -> DigitVoice | None:
        return draw_voice(rng) if self.corpus is None else None

    def describe_voice(self, voice: DigitVoice | None) -> dict[str, Any]:
        if voice is None:
            assert self.corpus is not None
            return {"source": "fsdd", "speaker": self.corpus.speaker}
        return voice.describe()

    def speak(
        self, digit: int, voice: DigitVoice | None, rng: np.random.Generator, sampling_rate: int
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if self.corpus is not None:
            return self.corpus.draw(digit, rng, sampling_rate)
        take = int(rng.integers(4))
        assert voice is not None
        return speak_digit(digit, voice, take, sampling_rate), {"take": take}


@dataclass(frozen=True)
class Distractors:
    """Background beds for AudioCountHard: procedural animal calls and rain, or ESC-50 classes 0-10."""

    corpus: DistractorCorpus | None = None

    def bed(
        self, rng: np.random.Generator, seconds: float, sampling_rate: int
    ) -> tuple[np.ndarray, dict[str, Any]]:
        n = int(round(seconds * sampling_rate))
        if self.corpus is None:
            category = distractors.CATEGORIES[int(rng.integers(len(distractors.CATEGORIES)))]
            return distractors.bed(category, seconds, sampling_rate, rng), {
                "source": "synth",
                "category": category,
            }
        raw, info = self.corpus.draw(rng, sampling_rate)
        fitted, offset = fit_length(cap_peak(raw, 0.999), n, rng)
        return fitted, {**info, "offset_samples": offset}


@dataclass(frozen=True)
class Machines:
    """Machine recordings: procedural units, or DCASE Task 2 development files."""

    corpus: MachineCorpus | None = None
