"""AudioRemap: two anchor sounds A and B get random distinct capital letters per episode; a MIX clip is
three A/B segments butted together (no gap) and its label spells the segments with those letters.

Every demo and the query show A and B with their letters, then a MIX. The demos use distinct patterns
out of the six (AAB, ABA, BAB, BAA, ABB, BBA), so at most 6 demos; the query pattern is any of the six.
"""

from __future__ import annotations

import itertools
import string
from typing import Any

import numpy as np

from audioeval.audioicl.common import Settings, clip, episode, episode_rng

PATTERNS = ("AAB", "ABA", "BAB", "BAA", "ABB", "BBA")


def max_shots(settings: Settings) -> tuple[int, str]:
    return len(PATTERNS), "the demos use distinct patterns out of the six (AAB, ABA, BAB, BAA, ABB, BBA)"


def spell(pattern: str, letters: dict[str, str]) -> str:
    return "".join(letters[c] for c in pattern)


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
    demo_patterns = [PATTERNS[int(i)] for i in rng.permutation(len(PATTERNS))]
    query_pattern = PATTERNS[int(rng.integers(len(PATTERNS)))]

    def shot(pattern: str, is_query: bool) -> dict[str, Any]:
        mix = np.clip(np.concatenate([anchors[c] for c in pattern]), -1.0, 1.0)
        label = spell(pattern, letters)
        return {
            "clips": [
                clip("A", letters["A"], anchors["A"], sr),
                clip("B", letters["B"], anchors["B"], sr),
                clip("MIX", None if is_query else label, mix, sr),
            ],
            "label": label,
            "pattern": pattern,
            "segments_s": [round(len(anchors[c]) / sr, 5) for c in pattern],
            "candidates": ["".join(p) for p in itertools.product((letters["A"], letters["B"]), repeat=3)],
        }

    query = shot(query_pattern, True)
    demos = [shot(p, False) for p in demo_patterns[: settings.max_shots]]
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
