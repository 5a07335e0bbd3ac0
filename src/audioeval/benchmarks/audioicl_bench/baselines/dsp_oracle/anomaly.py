"""AnomalyDetect: how far the query is from the demos' normal recordings of the same machine.

Each recording becomes a vector of 64 log-spaced band levels (the mean and the spread over time of their dB
energy), each band's impulsiveness (mean square over squared mean of its energy, in dB) and the impulsiveness
of the first difference of the waveform. Distances are per-feature scaled by the spread of the normal demos
(at least 0.5 dB-like units, 1 with one normal demo). The query's score is its distance to the nearest normal
demo; the threshold lies midway between the typical distance of a normal demo to the other normal demos
(leave one out; needs k >= 2) and the typical distance of an anomalous demo to the normal ones. With one
demo pair the threshold is half the anomalous demo's distance.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import stft

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.types import ShownClip, ShownEpisode

BANDS = 64
MIN_SCALE = 0.5
NORMAL, ANOMALOUS = "Normal", "Anomalous"


def features(clip: ShownClip) -> np.ndarray:
    x, sr = clip.samples, clip.sampling_rate
    freqs, _, z = stft(x, fs=sr, nperseg=1024, noverlap=512)
    power = np.abs(z) ** 2 + 1e-12
    edges = np.unique(np.round(np.geomspace(2, len(freqs) - 1, BANDS + 1)).astype(int))
    bands = np.array([power[lo:hi].sum(axis=0) for lo, hi in zip(edges[:-1], edges[1:], strict=True)])
    level = 10 * np.log10(bands)
    impulsive = 10 * np.log10(np.mean(bands**2, axis=1) / np.mean(bands, axis=1) ** 2)
    d = np.diff(x)
    spiky = 10 * np.log10(np.mean(d**4) / max(np.mean(d**2) ** 2, 1e-30) + 1e-12)
    return np.concatenate([level.mean(axis=1), level.std(axis=1), impulsive, [spiky]])


class AnomalyMethod(Method):
    tasks = configs_of("anomaly")
    name = "distance to the normal demos"
    needs_demos = True

    def _features(self, clip: ShownClip) -> np.ndarray:
        return self.cache.get(("anomaly-features", clip.sha256), lambda: features(clip))

    def predict(self, view: ShownEpisode) -> Prediction:
        shown = [c for d in view.demos for c in d.clips]
        normal = np.array([self._features(c) for c in shown if c.label == NORMAL])
        anomalous = np.array([self._features(c) for c in shown if c.label == ANOMALOUS])
        if not len(normal) or not len(anomalous):
            return Prediction(None, reason="the demos need both a Normal and an Anomalous recording")
        scale = np.maximum(normal.std(axis=0), MIN_SCALE) if len(normal) > 1 else np.ones(normal.shape[1])

        def distance(v: np.ndarray, skip: int | None = None) -> float:
            return min(float(np.linalg.norm((v - n) / scale)) for i, n in enumerate(normal) if i != skip)

        outside = float(np.median([distance(a) for a in anomalous]))
        if len(normal) > 1:
            inside = float(np.median([distance(n, i) for i, n in enumerate(normal)]))
            threshold = (inside + outside) / 2
        else:
            threshold = outside / 2
        score = distance(self._features(view.query.clips[-1]))
        return Prediction(
            ANOMALOUS if score > threshold else NORMAL,
            {"distance": round(score, 3), "threshold": round(threshold, 3)},
        )
