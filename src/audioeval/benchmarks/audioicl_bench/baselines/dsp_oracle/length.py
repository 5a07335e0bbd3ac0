"""AudioLength, AudioLengthHard: read a duration and map it to the label with a scale fitted on the demos.

Two kinds of duration are measured for every clip: its total length, and the time its 1 ms frames spend above
an energy threshold (relative to the clip's loudest frame; thresholds from -120 to -10 dB in 5 dB steps). For
each candidate measure the scale a of `label = a * duration` is fitted to the demos by least squares, and the
measure whose rounded predictions miss the demo labels by the fewest seconds wins. Which duration the labels
count (the whole clip, or only its sound) is thus induced from the demos, as is the threshold: when several
thresholds fit equally, the middle one is kept. Ties between the two kinds go to the scale closer to 1 (with
one demo whose clip has no silence, both fit it exactly). A scale that the demos cannot fix (every demo
silent) is taken as 1.
"""

from __future__ import annotations

import numpy as np

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import frame_db
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.types import ShownClip, ShownEpisode

THRESHOLDS_DB = tuple(range(-120, -9, 5))


def durations(clip: ShownClip) -> np.ndarray:
    """[total seconds, seconds above each threshold of THRESHOLDS_DB]."""
    sr = clip.sampling_rate
    hop = max(1, sr // 1000)
    levels = frame_db(clip.samples, hop)
    active = [(levels > t).sum() * hop / sr for t in THRESHOLDS_DB]
    return np.array([len(clip.samples) / sr, *active], dtype=np.float64)


def fit(measure: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """(scale through the origin, summed absolute error of the rounded fit)."""
    energy = float(measure @ measure)
    scale = float(measure @ labels) / energy if energy > 0 else 1.0
    return scale, float(np.abs(np.round(scale * measure) - labels).sum())


class LengthMethod(Method):
    tasks = configs_of("length")
    name = "energy-threshold duration with a fitted scale"
    needs_demos = True

    def _durations(self, clip: ShownClip) -> np.ndarray:
        return self.cache.get(("durations", clip.sha256), lambda: durations(clip))

    def predict(self, view: ShownEpisode) -> Prediction:
        try:
            labels = np.array([float(int(d.label or "")) for d in view.demos])
        except ValueError:
            return Prediction(None, reason="the demo labels are not whole numbers")
        table = np.stack([self._durations(d.clips[-1]) for d in view.demos])
        fits = [fit(table[:, h], labels) for h in range(table.shape[1])]
        best_error = min(error for _, error in fits)

        def closeness(scale: float) -> float:
            return abs(np.log(scale)) if scale > 0 else np.inf

        total_scale, total_error = fits[0]
        tied = [h for h in range(1, len(fits)) if fits[h][1] == best_error]
        use_active = bool(tied) and (
            total_error > best_error or min(closeness(fits[h][0]) for h in tied) < closeness(total_scale)
        )
        column = tied[len(tied) // 2] if use_active else 0
        scale = fits[column][0]
        query = self._durations(view.query.clips[-1])[column]
        answer = int(round(scale * query))
        return Prediction(
            str(max(answer, 0)),
            {
                "measure": f"seconds above {THRESHOLDS_DB[column - 1]} dB" if column else "total seconds",
                "scale": round(scale, 4),
                "demo_error_s": fits[column][1],
            },
        )
