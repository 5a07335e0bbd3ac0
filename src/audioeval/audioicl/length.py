"""AudioLength and AudioLengthHard: white noise (RMS 0.02) with one block of digital silence and 2-10
overlaid fragments of percussive one-shots.

AudioLength: total length L in 1..20 s, the silence block lasts U(0.2, max(0.2, min(1.5, L/4))) s and the
label is L. AudioLengthHard: the block lasts a whole number of seconds drawn from 0..min(10, L) and the
label is the non-silent time L - silence (0 means a fully silent clip). Demos and query draw their lengths
independently, so labels may repeat.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audioeval.audio.dsp import cap_peak, normalize_peak, seconds_to_samples
from audioeval.audioicl.common import QUERY_SLOT, Settings, clip, episode, slot_rng

LENGTHS = tuple(range(1, 21))
NOISE_RMS = 0.02
FRAGMENT_MIN_S = 0.03
ONESHOT_PEAK = 0.9
FINAL_PEAK = 0.98


def max_shots(settings: Settings) -> tuple[None, str]:
    return None, "every clip draws its length independently"


def _fragment_start(regions: list[tuple[int, int]], length: int, rng: np.random.Generator) -> int | None:
    """A start sample, uniform over all positions where `length` samples fit inside one region."""
    spans = [(a, b - length) for a, b in regions if b - a >= length]
    if not spans:
        return None
    sizes = np.array([hi - lo + 1 for lo, hi in spans], dtype=np.float64)
    pick = int(rng.choice(len(spans), p=sizes / sizes.sum()))
    lo, hi = spans[pick]
    return int(rng.integers(lo, hi + 1))


def render(
    settings: Settings, total_s: int, silence_n: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    """A clip of `total_s` seconds with one silent block of `silence_n` samples at a random position."""
    sr = settings.sampling_rate
    n = seconds_to_samples(total_s, sr)
    silence_start = int(rng.integers(0, n - silence_n + 1))
    out = np.zeros(n, dtype=np.float32)
    regions = [(a, b) for a, b in ((0, silence_start), (silence_start + silence_n, n)) if b > a]
    fragments = []
    if regions:
        for a, b in regions:
            out[a:b] = rng.standard_normal(b - a).astype(np.float32) * NOISE_RMS
        for _ in range(int(rng.integers(2, 11))):
            key = settings.oneshots.draw(rng)
            source = normalize_peak(
                np.asarray(settings.oneshots.samples(key, sr), dtype=np.float32), ONESHOT_PEAK
            )
            min_len = seconds_to_samples(FRAGMENT_MIN_S, sr)
            if len(source) < max(min_len, seconds_to_samples(0.01, sr)):
                continue
            offset = int(rng.integers(0, len(source) - min_len + 1))
            length = int(rng.integers(min_len, len(source) - offset + 1))
            start = _fragment_start(regions, length, rng)
            if start is None:
                continue
            gain = float(rng.uniform(0.8, 2.0))
            out[start : start + length] += gain * source[offset : offset + length]
            fragments.append(
                {"sound": settings.oneshots.describe(key), "start_s": round(start / sr, 4),
                 "seconds": round(length / sr, 4), "gain": round(gain, 3)}
            )  # fmt: skip
    out = cap_peak(out, FINAL_PEAK)
    info = {
        "total_s": total_s,
        "silence_s": round(silence_n / sr, 5),
        "silence_start_s": round(silence_start / sr, 5),
        "active_s": round((n - silence_n) / sr, 5),
        "fragments": fragments,
    }
    return out, info


def _shot(settings: Settings, index: int, slot: int, role: str) -> dict[str, Any]:
    rng = slot_rng(settings, index, slot)
    sr = settings.sampling_rate
    total = int(rng.integers(1, 21))
    if settings.task == "audio_length_hard":
        silence_n = int(rng.integers(0, min(10, total) + 1)) * sr
        label = total - silence_n // sr
    else:
        silence_s = float(rng.uniform(0.2, max(0.2, min(1.5, 0.25 * total))))
        silence_n = seconds_to_samples(silence_s, sr)
        label = total
    samples, info = render(settings, total, silence_n, rng)
    return {
        "clips": [clip(role, str(label) if role == "demo" else None, samples, sr)],
        "label": str(label),
        **info,
    }


def generate(settings: Settings, index: int) -> dict[str, Any]:
    hard = settings.task == "audio_length_hard"
    query = _shot(settings, index, QUERY_SLOT, "query")
    demos = [_shot(settings, index, i + 1, "demo") for i in range(settings.max_shots)]
    rule = (
        "label = seconds of non-silent audio (total length minus the silent block)"
        if hard
        else "label = total length of the clip in seconds"
    )
    return episode(settings, index, demos, query, {"rule": rule, "noise_rms": NOISE_RMS})
