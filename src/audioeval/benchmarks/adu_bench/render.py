"""Speaking a query with eSpeak NG across the paper's variation grid (its Appendix A).

The grid: 2 genders x 4 speakers (2 men, 2 women: eSpeak voice variants), speech rate, pitch and volume each
at standard and +-10%. Each rendering draws one combination at random, from a generator seeded by
(seed, item id, repetition), so a query sounds the same on every run and adding queries changes nothing
else. Pause ambiguity puts an SSML <break> where the query marks '|'; intonation ambiguity gives the final
word(s) a rising or falling pitch contour with SSML <prosody> and the matching terminal punctuation.

The +-10% levels are eSpeak parameters whose effect was measured on these voices: rate in words per minute
(duration 0.90x / 1.10x), base pitch 38 / 60 around 50 (median F0 0.90x / 1.10x), volume 90 / 110 around
100 (RMS 0.89x / 1.09x). eSpeak has no emotions, so the paper's four emotions are not part of the grid.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from html import escape

import numpy as np

from audioeval.audio.speech import synthesize
from audioeval.benchmarks.adu_bench.domains import LANGUAGES
from audioeval.benchmarks.adu_bench.queries import PAUSE_MARK, QueryItem
from audioeval.seeds import stable_seed

SPEAKERS: tuple[tuple[str, str], ...] = (("m1", "male"), ("m3", "male"), ("f2", "female"), ("f5", "female"))
LEVELS = ("-10%", "standard", "+10%")
RATE_WPM = {"-10%": 144, "standard": 160, "+10%": 176}
PITCH = {"-10%": 38, "standard": 50, "+10%": 60}
VOLUME = {"-10%": 90, "standard": 100, "+10%": 110}
PAUSE_MS = 700
RISE = (25, 45)  # percent pitch over the contour words: first word -> last word
FALL = (-20, -40)
MODES = ("random", "standard")


@dataclass(frozen=True)
class Variation:
    speaker: str
    gender: str
    voice: str
    rate: str
    pitch: str
    volume: str
    contour: str | None = None
    pause: str | None = None  # the spoken words with '‖' where the pause falls

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def choose_variation(item: QueryItem, repetition: int, seed: int, mode: str = "random") -> Variation:
    """The grid point for one rendering of `item` (mode `standard`: a random speaker, no perturbation)."""
    if mode not in MODES:
        raise ValueError(f"variation mode must be one of {MODES}, got {mode!r}")
    rng = np.random.default_rng(stable_seed("adu-variation", seed, item.dataset, item.item_id, repetition))
    speaker, gender = SPEAKERS[int(rng.integers(len(SPEAKERS)))]
    draws = [LEVELS[int(rng.integers(len(LEVELS)))] for _ in range(3)]
    rate, pitch, volume = draws if mode == "random" else ("standard",) * 3
    pause = item.spoken.replace(PAUSE_MARK, "‖") if item.spoken and PAUSE_MARK in item.spoken else None
    return Variation(
        speaker=speaker,
        gender=gender,
        voice=f"{LANGUAGES[item.language][1]}+{speaker}",
        rate=rate,
        pitch=pitch,
        volume=volume,
        contour=item.contour,
        pause=" ".join(pause.split()) if pause else None,
    )


def _contour_ssml(text: str, contour: str, n_words: int) -> str:
    words = text.split()
    head, tail = words[:-n_words], words[-n_words:]
    tail[-1] = tail[-1].rstrip(".!?…。？！")
    start, end = RISE if contour == "rising" else FALL
    marked = []
    for i, word in enumerate(tail):
        step = start + (end - start) * (i / (len(tail) - 1) if len(tail) > 1 else 1.0)
        marked.append(f'<prosody pitch="{step:+.0f}%">{escape(word)}</prosody>')
    final = "?" if contour == "rising" else "."
    return "<speak>" + " ".join([escape(w) for w in head] + marked) + final + "</speak>"


def _pause_ssml(spoken: str) -> str:
    pieces = [escape(" ".join(p.split())) for p in spoken.split(PAUSE_MARK)]
    return "<speak>" + f' <break time="{PAUSE_MS}ms"/> '.join(pieces) + "</speak>"


def speech_input(item: QueryItem) -> tuple[str, bool]:
    """(text for eSpeak, whether it is SSML)."""
    if item.contour:
        return _contour_ssml(item.question, item.contour, item.contour_words), True
    if item.spoken and PAUSE_MARK in item.spoken:
        return _pause_ssml(item.spoken), True
    return item.question, False


def render(item: QueryItem, variation: Variation, sampling_rate: int) -> np.ndarray:
    """The spoken query as float32 samples on the 16-bit grid."""
    text, ssml = speech_input(item)
    language, variant = variation.voice.split("+", 1)
    samples = synthesize(
        text,
        language=language,
        variant=variant,
        rate=RATE_WPM[variation.rate],
        pitch=PITCH[variation.pitch],
        volume=VOLUME[variation.volume],
        sampling_rate=sampling_rate,
        ssml=ssml,
    )
    if not len(samples):
        raise ValueError(f"{item.origin}: eSpeak NG produced no audio for {item.question!r}")
    return samples
