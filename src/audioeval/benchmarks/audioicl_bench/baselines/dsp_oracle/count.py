"""AudioCount, AudioCountHard: count the copies of the episode's sound with a matched filter.

Every clip of an episode repeats one sound. The template is a 50 ms cut of demo 1 around its loudest sample
(a copy's attack, which stands above any background). Each clip is scored against it at every offset with
`signal.match_score` and the peaks of the score are its candidate copies. Two constants are calibrated on the
demos so that their counts come out right:

- the suppression radius: peaks closer than this to a stronger one belong to the same copy (a ringing sound
  matches its own template again a few periods later). Tried from 10 ms to 1.3 s; the smallest radius whose
  margin (below) is at least half the best one wins, so closely spaced copies stay apart.
- the score threshold: the midpoint between the weakest peak that has to count and the strongest that must not.
  When no threshold fits every demo, the one that fits the most demos is used.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import find_peaks

try:  # find_peaks' own distance rule: the local maxima of a score are then found once, not once per radius
    from scipy.signal._peak_finding_utils import _select_by_peak_distance
except ImportError:  # a scipy that moved it: find_peaks per radius, the same peaks more slowly
    _select_by_peak_distance = None

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import match_score
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.types import ShownClip, ShownEpisode

TEMPLATE_BEFORE_S = 0.002
TEMPLATE_AFTER_S = 0.048
RADII_S = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28)
MAX_PEAKS = 64


def template_of(clip: ShownClip) -> np.ndarray:
    x, sr = clip.samples, clip.sampling_rate
    p = int(np.argmax(np.abs(x)))
    return x[max(0, p - int(TEMPLATE_BEFORE_S * sr)) : p + int(TEMPLATE_AFTER_S * sr)]


def peak_scores(score: np.ndarray, radius: int) -> np.ndarray:
    """Peak heights of the match score, strongest first, no two within `radius` samples."""
    if not len(score):
        return np.zeros(0)
    idx, props = find_peaks(score, height=0.0, distance=max(1, radius))
    return np.sort(props["peak_heights"])[::-1][:MAX_PEAKS]


def maxima(score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The score's local maxima of height 0 or more (positions, heights): what find_peaks keeps before its
    distance rule."""
    if not len(score):
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    idx, props = find_peaks(score, height=0.0)
    return idx, props["peak_heights"]


def peak_scores_of_maxima(score: np.ndarray, found: tuple[np.ndarray, np.ndarray], radius: int) -> np.ndarray:
    """peak_scores(score, radius) from the score's maxima, found once for all radii."""
    if _select_by_peak_distance is None:
        return peak_scores(score, radius)
    idx, heights = found
    if not len(idx):
        return np.zeros(0)
    keep = _select_by_peak_distance(idx, heights, max(1, radius))
    return np.sort(heights[keep])[::-1][:MAX_PEAKS]


def _kth(heights: np.ndarray, i: int) -> float:
    """The (i+1)-th strongest peak; 0 when there are fewer (the score's floor for silence)."""
    return float(heights[i]) if i < len(heights) else 0.0


def fit_threshold(demo_peaks: list[np.ndarray], counts: list[int]) -> tuple[int, float, float]:
    """(demos counted right, threshold, margin) for one radius. The margin is the width of the threshold
    interval that counts every demo right (negative when none does)."""
    must = min((_kth(p, c - 1) for p, c in zip(demo_peaks, counts, strict=True) if c > 0), default=np.inf)
    must_not = max(_kth(p, c) for p, c in zip(demo_peaks, counts, strict=True))  # strongest extra peak
    if must > must_not:
        threshold = (min(must, 1.0) + must_not) / 2
        return len(counts), threshold, min(must, 1.0) - must_not
    candidates = np.unique(np.concatenate([p for p in demo_peaks] + [np.zeros(1)]))
    thresholds = (candidates[:-1] + candidates[1:]) / 2 if len(candidates) > 1 else candidates
    best = max(
        thresholds,
        key=lambda t: sum(int(np.sum(p > t)) == c for p, c in zip(demo_peaks, counts, strict=True)),
    )
    right = sum(int(np.sum(p > best)) == c for p, c in zip(demo_peaks, counts, strict=True))
    return right, float(best), must - must_not


class CountMethod(Method):
    tasks = configs_of("count")
    name = "matched-filter event counting"
    needs_demos = True

    def _score(self, clip: ShownClip, template_clip: ShownClip, template: np.ndarray) -> np.ndarray:
        return self.cache.get(
            ("count-score", clip.sha256, template_clip.sha256), lambda: match_score(clip.samples, template)
        )

    def _peaks(
        self, clip: ShownClip, template_clip: ShownClip, template: np.ndarray, radius: int
    ) -> np.ndarray:
        """peak_scores of a clip's match score, kept per radius: the demos of k = 1, 3, 5 are nested."""
        score = self._score(clip, template_clip, template)
        found = self.cache.get(("count-maxima", clip.sha256, template_clip.sha256), lambda: maxima(score))
        return self.cache.get(
            ("count-peaks", clip.sha256, template_clip.sha256, radius),
            lambda: peak_scores_of_maxima(score, found, radius),
        )

    def predict(self, view: ShownEpisode) -> Prediction:
        demos = [(d.clips[-1], d.label) for d in view.demos]
        try:
            counts = [int(label or "") for _, label in demos]
        except (TypeError, ValueError):
            return Prediction(None, reason="the demo labels are not whole numbers")
        source = demos[0][0]
        template = template_of(source)
        if len(template) < 8 or not np.any(template):
            return Prediction(None, reason="demo 1 is silent: no sound to take a template from")
        sr = source.sampling_rate
        fits = []
        for radius_s in RADII_S:
            radius = int(radius_s * sr)
            peaks = [self._peaks(clip, source, template, radius) for clip, _ in demos]
            right, threshold, margin = fit_threshold(peaks, counts)
            fits.append((right, margin, radius_s, threshold))
        most_right = max(f[0] for f in fits)
        candidates = [f for f in fits if f[0] == most_right]
        best_margin = max(f[1] for f in candidates)
        floor = 0.5 * best_margin if best_margin > 0 else best_margin
        right, margin, radius_s, threshold = next(f for f in candidates if f[1] >= floor)
        query = view.query.clips[-1]
        heights = self._peaks(query, source, template, int(radius_s * sr))
        count = int(np.sum(heights > threshold))
        return Prediction(
            str(count),
            {
                "radius_s": radius_s,
                "threshold": round(threshold, 4),
                "margin": round(margin, 4),
                "demos_fit": f"{right}/{len(counts)}",
            },
        )
