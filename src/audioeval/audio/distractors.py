"""Procedural background beds for AudioCountHard, standing in for ESC-50 classes 0-10: ten animal-like
callers (dog, rooster, pig, cow, frog, cat, hen, insects, sheep, crow) and rain.

Calls are harmonic sources with a pitch contour, a spectral tilt, a formant band and some breath noise;
a bed places a few calls (or a continuous texture) on a canvas of the requested length.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from audioeval.audio.dsp import bandpass, fade, highpass, lowpass, normalize_peak, scipy_signal, sweep_phase

CATEGORIES = (
    "dog",
    "rooster",
    "pig",
    "cow",
    "frog",
    "cat",
    "hen",
    "insects",
    "sheep",
    "crow",
    "rain",
)


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _contour(n: int, points: list[float]) -> np.ndarray:
    """A piecewise-linear pitch contour through `points`, spread evenly over n samples."""
    xs = np.linspace(0, n - 1, len(points))
    return np.interp(np.arange(n), xs, points)


def _call(
    rng: np.random.Generator,
    sr: int,
    seconds: float,
    f0_points: list[float],
    formant: tuple[float, float],
    tilt: float = 0.6,
    noise: float = 0.2,
    vibrato: tuple[float, float] = (0.0, 0.0),
    attack: float = 0.02,
    release: float = 0.05,
) -> np.ndarray:
    n = max(16, int(seconds * sr))
    f0 = _contour(n, f0_points)
    if vibrato[0] > 0:
        f0 = f0 * (1 + vibrato[1] * np.sin(2 * np.pi * vibrato[0] * np.arange(n) / sr))
    phase = sweep_phase(f0, sr)
    out = np.zeros(n, dtype=np.float64)
    for h in range(1, 24):
        if float(f0.max()) * h >= sr * 0.45:
            break
        out += tilt ** (h - 1) * np.sin(h * phase)
    voiced = bandpass(out, formant[0], formant[1], sr) + 0.3 * out.astype(np.float32)
    breath = bandpass(rng.standard_normal(n), formant[0], formant[1] * 1.5, sr)
    x = normalize_peak(voiced, 1.0) + noise * normalize_peak(breath, 1.0)
    return fade(x, sr, fade_in=min(attack, seconds / 3), fade_out=min(release, seconds / 3))


def _dog(rng, sr):
    f = _u(rng, 350, 700)
    return _call(rng, sr, _u(rng, 0.12, 0.3), [f * 1.2, f, f * 0.8], (600, 2000), 0.7, 0.35, attack=0.01)


def _rooster(rng, sr):
    f = _u(rng, 380, 600)
    pts = [f, f * 1.3, f * 1.5, f * 1.45, f * 1.1]
    return _call(rng, sr, _u(rng, 1.0, 1.8), pts, (700, 3000), 0.75, 0.15, vibrato=(_u(rng, 20, 40), 0.02))


def _pig(rng, sr):
    f = _u(rng, 90, 180)
    return _call(rng, sr, _u(rng, 0.15, 0.4), [f, f * 1.1, f * 0.9], (200, 1200), 0.8, 0.6)


def _cow(rng, sr):
    f = _u(rng, 105, 160)
    return _call(
        rng, sr, _u(rng, 1.0, 2.0), [f, f * 1.15, f * 1.1, f * 0.9], (250, 900), 0.8, 0.1, release=0.2
    )


def _frog(rng, sr):
    seconds = _u(rng, 0.3, 0.8)
    n = int(seconds * sr)
    carrier = _call(rng, sr, seconds, [_u(rng, 250, 700)] * 2, (300, 2500), 0.6, 0.1)
    rate = _u(rng, 15, 40)
    gate = (np.sin(2 * np.pi * rate * np.arange(n) / sr) > 0.2).astype(np.float32)
    return lowpass(gate, 200, sr) * carrier[:n]


def _cat(rng, sr):
    f = _u(rng, 450, 850)
    return _call(rng, sr, _u(rng, 0.5, 1.0), [f, f * 1.4, f * 1.2, f * 0.8], (700, 3500), 0.65, 0.1)


def _hen(rng, sr):
    f = _u(rng, 300, 550)
    return _call(
        rng, sr, _u(rng, 0.06, 0.15), [f * 1.2, f], (500, 2500), 0.7, 0.3, attack=0.005, release=0.02
    )


def _sheep(rng, sr):
    f = _u(rng, 250, 400)
    vib = (_u(rng, 6, 10), _u(rng, 0.05, 0.1))
    return _call(rng, sr, _u(rng, 0.5, 1.0), [f, f * 1.05, f * 0.95], (500, 2500), 0.7, 0.15, vibrato=vib)


def _crow(rng, sr):
    f = _u(rng, 400, 700)
    return _call(rng, sr, _u(rng, 0.2, 0.45), [f, f * 0.9], (800, 3000), 0.8, 0.6, attack=0.01)


_CALLS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "dog": _dog,
    "rooster": _rooster,
    "pig": _pig,
    "cow": _cow,
    "frog": _frog,
    "cat": _cat,
    "hen": _hen,
    "sheep": _sheep,
    "crow": _crow,
}
# calls per bed and how many calls make one burst (e.g. a dog barks two or three times in a row)
_BURSTS = {
    "dog": ((2, 6), (1, 3), 0.08),
    "rooster": ((1, 3), (1, 1), 0.0),
    "pig": ((2, 5), (2, 5), 0.1),
    "cow": ((1, 3), (1, 1), 0.0),
    "frog": ((3, 8), (1, 2), 0.15),
    "cat": ((1, 4), (1, 1), 0.0),
    "hen": ((2, 5), (3, 6), 0.08),
    "sheep": ((1, 4), (1, 2), 0.2),
    "crow": ((2, 4), (2, 4), 0.15),
}


def _insects(rng: np.random.Generator, n: int, sr: int) -> np.ndarray:
    t = np.arange(n) / sr
    carrier = np.sin(2 * np.pi * _u(rng, 2500, min(6000, sr * 0.4)) * t)
    am = 0.5 + 0.5 * np.sin(2 * np.pi * _u(rng, 30, 80) * t)
    chirp = (np.sin(2 * np.pi * _u(rng, 0.5, 2.0) * t + _u(rng, 0, 6.28)) > -0.3).astype(np.float64)
    return (carrier * am * lowpass(chirp, 20, sr)).astype(np.float32)


def _rain(rng: np.random.Generator, n: int, sr: int) -> np.ndarray:
    hiss = lowpass(rng.standard_normal(n), _u(rng, 2000, 5000), sr) + 0.5 * lowpass(
        rng.standard_normal(n), 400, sr
    )
    drops = np.zeros(n)
    count = int(_u(rng, 20, 80) * n / sr)
    positions = rng.integers(0, n, count)
    drops[positions] = rng.uniform(0.3, 1.0, count) * rng.choice([-1.0, 1.0], count)
    r = np.exp(-1.0 / (0.002 * sr))
    w = 2 * np.pi * _u(rng, 2000, min(6000, sr * 0.4)) / sr
    drops = scipy_signal().lfilter([1.0], [1.0, -2 * r * np.cos(w), r * r], drops)
    return (normalize_peak(hiss, 0.5) + normalize_peak(highpass(drops, 1000, sr), 1.0)).astype(np.float32)


def bed(category: str, seconds: float, sampling_rate: int, rng: np.random.Generator) -> np.ndarray:
    """A background of `seconds` with calls of `category` (or rain), peak-normalised to 0.9."""
    n = int(round(seconds * sampling_rate))
    if category == "insects":
        return normalize_peak(_insects(rng, n, sampling_rate), 0.9)
    if category == "rain":
        return normalize_peak(_rain(rng, n, sampling_rate), 0.9)
    if category not in _CALLS:
        raise ValueError(f"unknown distractor category {category!r}; known: {', '.join(CATEGORIES)}")
    out = np.zeros(n, dtype=np.float32)
    (lo, hi), (blo, bhi), spacing = _BURSTS[category]
    for _ in range(int(rng.integers(lo, hi + 1))):
        position = int(rng.integers(0, n))
        for _ in range(int(rng.integers(blo, bhi + 1))):
            call = _CALLS[category](rng, sampling_rate) * _u(rng, 0.6, 1.0)
            stop = min(n, position + len(call))
            out[position:stop] += call[: stop - position]
            position += len(call) + int(spacing * sampling_rate * _u(rng, 0.5, 1.5))
            if position >= n:
                break
    return normalize_peak(out, 0.9)
