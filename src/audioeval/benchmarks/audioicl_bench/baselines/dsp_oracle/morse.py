"""MorseCode, MorseLetter: decode tone on/off timing with the A-Z reference bank as the code book.

Everything is measured on the bank (the labelled context clips), so it works at k=0:

- the tone frequency: the strongest spectral line of the bank; the envelope is the analytic-signal magnitude
  smoothed over one period, and a tone is "on" above half the bank's loudest envelope level;
- dot vs dash: the bank's tone durations fall into two groups; the boundary is the middle of the widest gap
  between them (on a log scale);
- the code book: each bank letter's dot/dash pattern, read with that boundary (no Morse table is built in);
- the letter gap: a silence longer than twice the bank's typical gap between elements separates letters. With
  demos, the threshold is refitted: a demo word of n letters has n - 1 letter gaps, its longest silences, so
  the threshold goes midway between the longest in-letter gap and the shortest letter gap seen.

A pattern missing from the bank is read as the bank letter with the nearest pattern (edit distance). The answer
is written in the demos' letter case (the bank's when there are no demos).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import (
    dominant_frequency,
    on_off_runs,
    tone_envelope,
)
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.types import ShownClip, ShownEpisode


def edit_distance(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


@dataclass
class MorseDecoder:
    sampling_rate: int
    tone_hz: float
    on_level: float
    dash_boundary: int  # samples: tones longer than this are dashes
    letter_gap: float  # samples: silences longer than this separate letters
    code_book: dict[str, str]  # pattern ('.-') -> letter

    @classmethod
    def from_bank(cls, bank: list[ShownClip]) -> MorseDecoder:
        sr = bank[0].sampling_rate
        tone_hz = dominant_frequency(np.concatenate([c.samples for c in bank]), sr)
        envelopes = [tone_envelope(c.samples, sr, tone_hz) for c in bank]
        on_level = 0.5 * float(max(e.max() for e in envelopes))
        runs = [on_off_runs(e > on_level) for e in envelopes]
        tones = np.sort(np.log([n for r in runs for on, n in r if on]))
        if len(tones) < 2 or tones[-1] - tones[0] < np.log(1.5):
            raise ValueError("the bank's tones do not fall into short and long ones")
        widest = int(np.argmax(np.diff(tones)))
        boundary = int(np.exp((tones[widest] + tones[widest + 1]) / 2))
        gaps = [n for r in runs for on, n in r if not on]
        element_gap = float(np.median(gaps)) if gaps else float(np.exp(tones[0]))
        decoder = cls(sr, tone_hz, on_level, boundary, 2.0 * element_gap, {})
        for clip, r in zip(bank, runs, strict=True):
            decoder.code_book.setdefault(decoder.pattern(r), str(clip.label))
        return decoder

    def runs(self, clip: ShownClip) -> list[tuple[bool, int]]:
        return on_off_runs(tone_envelope(clip.samples, self.sampling_rate, self.tone_hz) > self.on_level)

    def pattern(self, runs: list[tuple[bool, int]]) -> str:
        return "".join("-" if n > self.dash_boundary else "." for on, n in runs if on)

    def refit_letter_gap(self, demos: list[tuple[ShownClip, str]]) -> bool:
        """Place the letter-gap threshold from demo words; False when they contradict each other."""
        inside, between = [], []
        for clip, text in demos:
            gaps = sorted(n for on, n in self.runs(clip) if not on)
            letter_gaps = len(text.replace(" ", "")) - 1
            if letter_gaps > len(gaps):
                return False
            if letter_gaps:
                between.append(gaps[len(gaps) - letter_gaps])
            if len(gaps) > letter_gaps:
                inside.append(gaps[len(gaps) - letter_gaps - 1])
        if not between or not inside or max(inside) >= min(between):
            return False
        self.letter_gap = (max(inside) + min(between)) / 2
        return True

    def letter(self, runs: list[tuple[bool, int]]) -> str:
        code = self.pattern(runs)
        if code in self.code_book:
            return self.code_book[code]
        return min(self.code_book.items(), key=lambda item: edit_distance(code, item[0]))[1]

    def decode(self, clip: ShownClip) -> str:
        letters: list[list[tuple[bool, int]]] = []
        current: list[tuple[bool, int]] = []
        for on, n in self.runs(clip):
            if not on and n > self.letter_gap:
                letters.append(current)
                current = []
            else:
                current.append((on, n))
        letters.append(current)
        return "".join(self.letter(r) for r in letters if r)


class MorseMethod(Method):
    tasks = configs_of("morse")
    name = "tone on/off decoding with the reference bank"
    needs_demos = False

    def predict(self, view: ShownEpisode) -> Prediction:
        bank = [c for c in view.context if c.label]
        if len(bank) < 2:
            return Prediction(None, reason="the episode has no labelled Morse reference bank")
        key = ("morse-bank", *(c.sha256 for c in bank))
        try:
            base = self.cache.get(key, lambda: MorseDecoder.from_bank(bank))
        except ValueError as err:
            return Prediction(None, reason=str(err))
        decoder = MorseDecoder(**{**base.__dict__, "code_book": base.code_book})
        demos = [(d.clips[-1], d.label or "") for d in view.demos]
        refit = decoder.refit_letter_gap(demos) if demos else False
        text = decoder.decode(view.query.clips[-1])
        labels = [label for _, label in demos if label]
        if labels and all(label == label.lower() for label in labels):
            text = text.lower()
        sr = decoder.sampling_rate
        return Prediction(
            text,
            {
                "tone_hz": round(decoder.tone_hz, 1),
                "dash_above_s": round(decoder.dash_boundary / sr, 4),
                "letter_gap_above_s": round(decoder.letter_gap / sr, 4),
                "letter_gap_from": "demos" if refit else "bank",
            },
        )
