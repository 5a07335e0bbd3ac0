"""International Morse code rendered as a keyed sine tone with standard timing.

Timing in units (PARIS convention, unit = 1.2 / wpm seconds): dot 1, dash 3, gap inside a letter 1,
between letters 3, between words 7. Each tone element has 5 ms raised-cosine edges inside its own duration
(no clicks), so on/off times measured at half amplitude match the nominal timing to within a few ms.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

CODE: dict[str, str] = {
    "A": ".-", "B": "-...", "C": "-.-.", "D": "-..", "E": ".", "F": "..-.", "G": "--.", "H": "....",
    "I": "..", "J": ".---", "K": "-.-", "L": ".-..", "M": "--", "N": "-.", "O": "---", "P": ".--.",
    "Q": "--.-", "R": ".-.", "S": "...", "T": "-", "U": "..-", "V": "...-", "W": ".--", "X": "-..-",
    "Y": "-.--", "Z": "--..",
}  # fmt: skip
LETTERS = tuple(CODE)
DOT, DASH, INTRA_GAP, LETTER_GAP, WORD_GAP = 1, 3, 1, 3, 7


@dataclass(frozen=True)
class MorseStyle:
    wpm: float = 20.0
    tone_hz: float = 600.0
    amplitude: float = 0.5
    padding_s: float = 0.1  # silence before the first and after the last element
    edge_s: float = 0.005

    @property
    def unit_s(self) -> float:
        return 1.2 / self.wpm

    def describe(self) -> dict[str, float]:
        return {
            "wpm": self.wpm,
            "tone_hz": self.tone_hz,
            "unit_s": round(self.unit_s, 6),
            "padding_s": self.padding_s,
        }


def encode(text: str) -> str:
    """Dots and dashes with ' ' between letters and ' / ' between words, e.g. 'sos' -> '... --- ...'."""
    words = []
    for word in text.upper().split():
        unknown = [c for c in word if c not in CODE]
        if unknown:
            raise ValueError(
                f"no Morse code for {unknown[0]!r} in {text!r}; only the letters A-Z are supported"
            )
        words.append(" ".join(CODE[c] for c in word))
    return " / ".join(words)


def timing(text: str) -> list[tuple[bool, int]]:
    """The key sequence as (tone_on, units) runs, without the padding."""
    runs: list[tuple[bool, int]] = []
    for w, word in enumerate(text.upper().split()):
        if w:
            runs.append((False, WORD_GAP))
        for c, letter in enumerate(word):
            if c:
                runs.append((False, LETTER_GAP))
            for e, symbol in enumerate(CODE[letter]):
                if e:
                    runs.append((False, INTRA_GAP))
                runs.append((True, DOT if symbol == "." else DASH))
    return runs


@lru_cache(maxsize=256)
def _element(n: int, edge: int, tone_hz: float, amplitude: float, sampling_rate: int) -> np.ndarray:
    t = np.arange(n) / sampling_rate
    x = amplitude * np.sin(2 * np.pi * tone_hz * t)
    edge = min(edge, n // 2)
    if edge > 0:
        ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(edge) / edge)
        x[:edge] *= ramp
        x[n - edge :] *= ramp[::-1]
    return x.astype(np.float32)


@lru_cache(maxsize=4096)
def _render_cached(text: str, style: MorseStyle, sampling_rate: int) -> np.ndarray:
    unit = style.unit_s * sampling_rate
    pad = int(round(style.padding_s * sampling_rate))
    runs = timing(text)
    total_units = sum(u for _, u in runs)
    out = np.zeros(2 * pad + int(round(total_units * unit)), dtype=np.float32)
    position = 0  # in units; element boundaries are rounded from exact unit positions, so no drift
    edge = int(round(style.edge_s * sampling_rate))
    for on, units in runs:
        if on:
            start = pad + int(round(position * unit))
            stop = pad + int(round((position + units) * unit))
            out[start:stop] = _element(stop - start, edge, style.tone_hz, style.amplitude, sampling_rate)
        position += units
    out.setflags(write=False)
    return out


def render(text: str, style: MorseStyle, sampling_rate: int = 16000) -> np.ndarray:
    """The keyed tone for `text` (letters and spaces), read-only float32."""
    encode(text)  # validates the characters
    return _render_cached(" ".join(text.upper().split()), style, int(sampling_rate))
