"""AudioCount and AudioCountHard: 1-8 non-overlapping copies of one percussive sound on a 10 s canvas.

Episode: one sound for every clip; the counts of the query and the demos are distinct draws from 1..8
(so at most 7 demos), as upstream. With shortcut_free the demos keep their distinct counts but the query's count
is drawn from 1..8 independently of them, so "the answer is a count no demo shows" no longer holds. Hard: a distractor bed (animal calls or rain) mixed at 10-15 dB SNR with the
background peak capped at half the foreground peak, as upstream does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audioeval.audio.dsp import cap_peak, fade, mix_at_snr, seconds_to_samples
from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    episode_rng,
    outline_clip,
    slot_rng,
)

COUNTS = tuple(range(1, 9))
CANVAS_S = 10.0
MIN_GAP_S = 0.05  # digital silence between copies, so every copy is heard as its own event
MAX_EVENT_S = 1.0  # 8 copies of 1 s plus the gaps fit the canvas
PEAK_RATIO_CAP = 0.5


def max_shots(settings: Settings) -> tuple[int, str]:
    return len(COUNTS) - 1, "the query and the demos get distinct counts from 1..8"


def place(n_canvas: int, length: int, count: int, gap: int, rng: np.random.Generator) -> list[int]:
    """Start samples of `count` copies of `length` samples with at least `gap` samples between copies,
    uniform over all such layouts (sorted uniform offsets of the free space)."""
    slack = n_canvas - count * length - (count - 1) * gap
    if slack < 0:
        raise ValueError(f"{count} copies of {length} samples do not fit a canvas of {n_canvas}")
    offsets = np.sort(rng.integers(0, slack + 1, size=count))
    return [int(o) + i * (length + gap) for i, o in enumerate(offsets)]


def _event(settings: Settings, key: int) -> np.ndarray:
    sr = settings.sampling_rate
    x = settings.oneshots.samples(key, sr)
    if len(x) > MAX_EVENT_S * sr:
        x = fade(x[: int(MAX_EVENT_S * sr)], sr, fade_out=0.02)
    return cap_peak(np.asarray(x, dtype=np.float32), 0.999)


def _render(
    settings: Settings, event: np.ndarray, count: int, rng: np.random.Generator, hard: bool
) -> tuple[np.ndarray, dict[str, Any]]:
    sr = settings.sampling_rate
    n = seconds_to_samples(CANVAS_S, sr)
    starts = place(n, len(event), count, seconds_to_samples(MIN_GAP_S, sr), rng)
    canvas = np.zeros(n, dtype=np.float32)
    for s in starts:
        canvas[s : s + len(event)] += event
    info: dict[str, Any] = {"count": count, "onsets_s": [round(s / sr, 5) for s in starts]}
    if hard:
        lo, hi = settings.distractor_snr_db
        snr = float(rng.uniform(lo, hi))
        background, bg_info = settings.distractors.bed(rng, CANVAS_S, sr)
        canvas, alpha, capped = mix_at_snr(canvas, background, snr, PEAK_RATIO_CAP)
        info["distractor"] = {**bg_info, "snr_db": round(snr, 3), "alpha": round(alpha, 6), "capped": capped}
    return np.clip(cap_peak(canvas, 0.999), -1.0, 1.0), info


RULE = "label = number of times the sound occurs"


def _plan(settings: Settings, index: int) -> tuple[int, list[int]]:
    """The episode's draws before any rendering: the sound's key and the counts (query first)."""
    rng = episode_rng(settings, index)
    key = settings.oneshots.draw(rng)
    counts = [int(c) for c in rng.permutation(np.array(COUNTS))]
    if settings.shortcut_free:
        counts[0] = int(rng.choice(COUNTS))
    return key, counts


def outline(settings: Settings, index: int) -> dict[str, Any]:
    """The episode's labels and clip identities without rendering (`EpisodeBuilder.episode_outline`). Every
    clip is laid out by its own slot's generator (and, hard, mixed with its own bed), so none is a twin."""
    _key, counts = _plan(settings, index)

    def shot(slot: int, count: int, role: str) -> dict[str, Any]:
        label = str(count)
        return {"clips": [outline_clip(settings, index, slot, role, label if role == "demo" else None)],
                "label": label, "count": count}  # fmt: skip

    query = shot(QUERY_SLOT, counts[0], "query")
    demos = [shot(i + 1, counts[i + 1], "demo") for i in range(settings.max_shots)]
    facts = {"rule": RULE, "query_count": counts[0], "demo_counts": counts[1 : 1 + settings.max_shots]}
    return episode(settings, index, demos, query, facts)


def generate(settings: Settings, index: int) -> dict[str, Any]:
    hard = settings.task == "audio_count_hard"
    key, counts = _plan(settings, index)
    event = _event(settings, key)
    sr = settings.sampling_rate

    def shot(slot: int, count: int, role: str) -> dict[str, Any]:
        samples, info = _render(settings, event, count, slot_rng(settings, index, slot), hard)
        label = str(count)
        return {"clips": [clip(role, label if role == "demo" else None, samples, sr)], "label": label, **info}

    query = shot(QUERY_SLOT, counts[0], "query")
    demos = [shot(i + 1, counts[i + 1], "demo") for i in range(settings.max_shots)]
    return episode(
        settings,
        index,
        demos,
        query,
        {
            "rule": RULE,
            "sound": settings.oneshots.describe(key),
            "event_s": round(len(event) / sr, 5),
            "canvas_s": CANVAS_S,
            "min_gap_s": MIN_GAP_S,
            "query_count": counts[0],
            "demo_counts": counts[1 : 1 + settings.max_shots],
        },
    )
