"""AudioRemap: spell the MIX with the letters of the anchors it is made of.

The query shows its anchors with their letters, so nothing needs calibrating and it works at k=0. The MIX is
segmented by dynamic programming over the ways of laying the anchors end to end: each placed anchor costs the
share of the MIX's energy in that stretch that the anchor (at its best gain) does not explain, and the cheapest
tiling that ends at the MIX's last sample (or as close to it as any tiling reaches) is read out. When the demos
show MIX labels, only tilings with as many segments as those labels have letters are allowed.
"""

from __future__ import annotations

import numpy as np

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.types import ShownEpisode

MAX_SEGMENTS = 64


def tile(mix: np.ndarray, anchors: dict[str, np.ndarray], segments: int | None) -> tuple[str, float] | None:
    """(letters, cost) of the cheapest tiling of `mix` by anchors, `segments` of them when given."""
    n = len(mix)
    # state: (position, segments used) -> (cost, letters)
    states: dict[tuple[int, int], tuple[float, str]] = {(0, 0): (0.0, "")}
    frontier = [(0, 0)]
    finals: list[tuple[int, float, str]] = []
    limit = segments if segments is not None else MAX_SEGMENTS
    while frontier:
        frontier.sort()
        nxt: set[tuple[int, int]] = set()
        for position, used in frontier:
            cost, letters = states[(position, used)]
            finals.append((position, cost, letters))
            if used >= limit:
                continue
            for letter, anchor in anchors.items():
                end = position + len(anchor)
                if end > n or not len(anchor):
                    continue
                window = mix[position:end]
                energy = float(window @ window)
                gain = float(window @ anchor) / float(anchor @ anchor)
                residual = float(((window - gain * anchor) ** 2).sum()) / energy if energy > 0 else 0.0
                state = (end, used + 1)
                if state not in states or cost + residual < states[state][0]:
                    states[state] = (cost + residual, letters + letter)
                    nxt.add(state)
        frontier = list(nxt)
    if segments is not None:
        finals = [f for f in finals if len(f[2]) == segments]
    finals = [f for f in finals if f[2]]
    if not finals:
        return None
    position, cost, letters = min(finals, key=lambda f: (n - f[0], f[1]))
    return letters, cost


class RemapMethod(Method):
    tasks = configs_of("remap")
    name = "segment-to-anchor matching"
    needs_demos = False

    def predict(self, view: ShownEpisode) -> Prediction:
        *anchors, mix = view.query.clips
        letters = {c.label: c.samples for c in anchors if c.label}
        if not letters:
            return Prediction(None, reason="the query shows no labelled anchor clips")
        lengths = {len(d.label or "") for d in view.demos if d.label}
        segments = lengths.pop() if len(lengths) == 1 else None
        found = tile(mix.samples, letters, segments)
        if found is None:
            return Prediction(None, reason="no tiling of the MIX by the anchors")
        text, cost = found
        return Prediction(text, {"segments": len(text), "unexplained_energy": round(cost, 4)})
