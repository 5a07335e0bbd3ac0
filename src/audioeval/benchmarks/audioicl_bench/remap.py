"""AudioRemap: two anchor sounds A and B get random distinct capital letters per episode; a MIX clip is
three A/B segments butted together (no gap) and its label spells the segments with those letters.

Every demo and the query show A and B with their letters, then a MIX. The demos use distinct patterns
out of the six (AAB, ABA, BAB, BAA, ABB, BBA), so at most 6 demos; the query pattern is any of the six, as
upstream. Since every MIX of a pattern is the same clip, the query MIX is then byte-identical to a demo's
whenever its pattern was shown, and a different clip tells that its pattern is none of the demos'.

With shortcut_free: patterns come from all eight A/B strings (AAA and BBB included, so at most 8 demos), and
each MIX is its own rendering: a silent gap of 0-80 ms between segments and a gain of -3..0 dB per segment,
drawn per clip. The query MIX is never byte-identical to a demo's, and its pattern, drawn independently of the
demos', may or may not be among them.
"""

from __future__ import annotations

import itertools
import string
from typing import Any

import numpy as np

from audioeval.audio.dsp import seconds_to_samples
from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    episode_rng,
    slot_rng,
)

PATTERNS = ("AAB", "ABA", "BAB", "BAA", "ABB", "BBA")
ALL_PATTERNS = tuple("".join(p) for p in itertools.product("AB", repeat=3))
GAP_S = (0.0, 0.08)  # shortcut_free: silence between consecutive segments
GAIN_DB = (-3.0, 0.0)  # shortcut_free: gain of each segment


def patterns(settings: Settings) -> tuple[str, ...]:
    return ALL_PATTERNS if settings.shortcut_free else PATTERNS


def max_shots(settings: Settings) -> tuple[int, str]:
    pool = patterns(settings)
    return len(pool), f"the demos use distinct patterns out of the {len(pool)} ({', '.join(pool)})"


def spell(pattern: str, letters: dict[str, str]) -> str:
    return "".join(letters[c] for c in pattern)


def render_mix(
    pattern: str, anchors: dict[str, np.ndarray], sr: int, rng: np.random.Generator | None
) -> tuple[np.ndarray, dict[str, Any]]:
    """The anchors of `pattern` back to back; with `rng` (shortcut_free) a random gap and gain per segment."""
    if rng is None:
        return np.clip(np.concatenate([anchors[c] for c in pattern]), -1.0, 1.0), {}
    gains = [float(rng.uniform(*GAIN_DB)) for _ in pattern]
    gaps = [seconds_to_samples(float(rng.uniform(*GAP_S)), sr) for _ in pattern[1:]]
    parts: list[np.ndarray] = []
    for i, (c, gain) in enumerate(zip(pattern, gains, strict=True)):
        if i:
            parts.append(np.zeros(gaps[i - 1], dtype=np.float32))
        parts.append(anchors[c] * np.float32(10 ** (gain / 20)))
    info = {"gains_db": [round(g, 3) for g in gains], "gaps_s": [round(g / sr, 5) for g in gaps]}
    return np.clip(np.concatenate(parts), -1.0, 1.0), info


def generate(settings: Settings, index: int) -> dict[str, Any]:
    sr = settings.sampling_rate
    rng = episode_rng(settings, index)
    first, second = (string.ascii_uppercase[int(i)] for i in rng.choice(26, size=2, replace=False))
    letters = {"A": first, "B": second}
    key_a = settings.oneshots.draw(rng)
    key_b = settings.oneshots.draw(rng, avoid=(key_a,))
    anchors = {
        "A": np.asarray(settings.oneshots.samples(key_a, sr)),
        "B": np.asarray(settings.oneshots.samples(key_b, sr)),
    }
    pool = patterns(settings)
    demo_patterns = [pool[int(i)] for i in rng.permutation(len(pool))]
    query_pattern = pool[int(rng.integers(len(pool)))]

    def shot(pattern: str, slot: int, avoid: tuple[str, ...] = ()) -> dict[str, Any]:
        label = spell(pattern, letters)
        variation = slot_rng(settings, index, slot) if settings.shortcut_free else None
        while True:  # with shortcut_free, redraw in the (practically impossible) case of a demo's twin
            mix, info = render_mix(pattern, anchors, sr, variation)
            mix_clip = clip("MIX", None if slot == QUERY_SLOT else label, mix, sr)
            if variation is None or mix_clip["audio"].sha256 not in avoid:
                break
        return {
            "clips": [
                clip("A", letters["A"], anchors["A"], sr),
                clip("B", letters["B"], anchors["B"], sr),
                mix_clip,
            ],
            "label": label,
            "pattern": pattern,
            "segments_s": [round(len(anchors[c]) / sr, 5) for c in pattern],
            **info,
            "candidates": ["".join(p) for p in itertools.product((letters["A"], letters["B"]), repeat=3)],
        }

    demos = [shot(p, i + 1) for i, p in enumerate(demo_patterns[: settings.max_shots])]
    demo_mixes = tuple(d["clips"][-1]["audio"].sha256 for d in demos)
    query = shot(query_pattern, QUERY_SLOT, demo_mixes)
    return episode(
        settings,
        index,
        demos,
        query,
        {
            "rule": "label = the letters of the anchors heard in the MIX, in order",
            "letters": letters,
            "anchor_sounds": {"A": settings.oneshots.describe(key_a), "B": settings.oneshots.describe(key_b)},
        },
    )
