"""AudioLength and AudioLengthHard: white noise (RMS 0.02) with digital silence and 2-10 overlaid fragments of
percussive one-shots in the audible parts.

AudioLength (upstream's generator): total length L in 1..20 s with one silent block of
U(0.2, max(0.2, min(1.5, L/4))) s at a random position; the label is L.

AudioLengthHard (the paper's text: "inserts random periods of silence into an audio clip, splitting the audible
content into multiple active segments ... the active-region duration follows the same range as AL"): the label
is the audible time A, uniform in 1..20 s, split into 3-5 active segments (each at least 0.2 s) separated by
silent gaps of 0.3-2 s, so the clip lasts A plus the gaps. Upstream's released generator instead cut one
whole-second silent block out of an L-second clip, which made the label L - silence (0-20) far from uniform.

Demos and query draw independently, so labels may repeat.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audioeval.audio.dsp import cap_peak, normalize_peak, seconds_to_samples
from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    outline_clip,
    slot_rng,
)

LENGTHS = tuple(range(1, 21))
NOISE_RMS = 0.02
FRAGMENT_MIN_S = 0.03
ONESHOT_PEAK = 0.9
FINAL_PEAK = 0.98
HARD_SEGMENTS = (3, 5)  # AudioLengthHard: active segments per clip, inclusive range
HARD_MIN_SEGMENT_S = 0.2
HARD_GAP_S = (0.3, 2.0)


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
    settings: Settings, n: int, regions: list[tuple[int, int]], rng: np.random.Generator
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """`n` samples of digital silence with noise and one-shot fragments inside the audible `regions`."""
    sr = settings.sampling_rate
    out = np.zeros(n, dtype=np.float32)
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
    return cap_peak(out, FINAL_PEAK), fragments


def _spans(regions: list[tuple[int, int]], sr: int) -> list[dict[str, float]]:
    return [{"start_s": round(a / sr, 5), "seconds": round((b - a) / sr, 5)} for a, b in regions]


def draw_label(rng: np.random.Generator) -> int:
    """A clip's label, the first draw of its slot's generator: the length (easy) or the audible time (hard)."""
    return int(rng.integers(LENGTHS[0], LENGTHS[-1] + 1))


def _easy(settings: Settings, rng: np.random.Generator) -> tuple[int, np.ndarray, dict[str, Any]]:
    sr = settings.sampling_rate
    total = draw_label(rng)
    silence_n = seconds_to_samples(float(rng.uniform(0.2, max(0.2, min(1.5, 0.25 * total)))), sr)
    n = seconds_to_samples(total, sr)
    silence_start = int(rng.integers(0, n - silence_n + 1))
    regions = [(a, b) for a, b in ((0, silence_start), (silence_start + silence_n, n)) if b > a]
    samples, fragments = render(settings, n, regions, rng)
    info = {
        "total_s": total,
        "silence_s": round(silence_n / sr, 5),
        "silence_start_s": round(silence_start / sr, 5),
        "active_s": round((n - silence_n) / sr, 5),
        "fragments": fragments,
    }
    return total, samples, info


def hard_layout(active_n: int, sr: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """(segment lengths, gap lengths) in samples: `active_n` audible samples split into 3-5 segments of at
    least HARD_MIN_SEGMENT_S (uniform over all such splits), with a silent gap between consecutive segments."""
    low, high = HARD_SEGMENTS
    shortest = seconds_to_samples(HARD_MIN_SEGMENT_S, sr)
    count = int(rng.integers(low, min(high, active_n // shortest) + 1))
    slack = active_n - count * shortest
    cuts = np.sort(rng.integers(0, slack + 1, size=count - 1))
    segments = [int(d) + shortest for d in np.diff(np.concatenate([[0], cuts, [slack]]))]
    gaps = [seconds_to_samples(float(rng.uniform(*HARD_GAP_S)), sr) for _ in range(count - 1)]
    return segments, gaps


def _hard(settings: Settings, rng: np.random.Generator) -> tuple[int, np.ndarray, dict[str, Any]]:
    sr = settings.sampling_rate
    active = draw_label(rng)
    segments, gaps = hard_layout(seconds_to_samples(active, sr), sr, rng)
    regions, silences, position = [], [], 0
    for i, length in enumerate(segments):
        regions.append((position, position + length))
        position += length
        if i < len(gaps):
            silences.append((position, position + gaps[i]))
            position += gaps[i]
    samples, fragments = render(settings, position, regions, rng)
    info = {
        "total_s": round(position / sr, 5),
        "active_s": active,
        "segments": _spans(regions, sr),
        "silences": _spans(silences, sr),
        "fragments": fragments,
    }
    return active, samples, info


def _shot(settings: Settings, index: int, slot: int, role: str) -> dict[str, Any]:
    rng = slot_rng(settings, index, slot)
    label, samples, info = (_hard if settings.task == "audio_length_hard" else _easy)(settings, rng)
    sr = settings.sampling_rate
    return {
        "clips": [clip(role, str(label) if role == "demo" else None, samples, sr)],
        "label": str(label),
        **info,
    }


def _rule(settings: Settings) -> str:
    if settings.task == "audio_length_hard":
        return "label = seconds of audible sound (the active segments, without the silent gaps between them)"
    return "label = total length of the clip in seconds"


def outline(settings: Settings, index: int) -> dict[str, Any]:
    """The episode's labels and clip identities without rendering (`EpisodeBuilder.episode_outline`). Every
    clip is drawn from its own slot's generator (its noise among them), so none is a twin."""

    def shot(slot: int, role: str) -> dict[str, Any]:
        label = str(draw_label(slot_rng(settings, index, slot)))
        return {"clips": [outline_clip(settings, index, slot, role, label if role == "demo" else None)],
                "label": label}  # fmt: skip

    demos = [shot(i + 1, "demo") for i in range(settings.max_shots)]
    return episode(settings, index, demos, shot(QUERY_SLOT, "query"), {"rule": _rule(settings)})


def generate(settings: Settings, index: int) -> dict[str, Any]:
    query = _shot(settings, index, QUERY_SLOT, "query")
    demos = [_shot(settings, index, i + 1, "demo") for i in range(settings.max_shots)]
    return episode(settings, index, demos, query, {"rule": _rule(settings), "noise_rms": NOISE_RMS})
