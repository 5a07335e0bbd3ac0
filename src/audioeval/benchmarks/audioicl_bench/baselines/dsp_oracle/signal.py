"""Signal analysis shared by the `dsp-oracle` methods: frame energies, sound islands, level-sensitive
template matching, tone envelopes, MFCC frames and dynamic time warping. Pure numpy/scipy functions."""

from __future__ import annotations

import numpy as np
from scipy.signal import fftconvolve, hilbert

from audioeval.audio.features import dct_matrix, log_mel


def frame_db(x: np.ndarray, hop: int) -> np.ndarray:
    """Mean power of consecutive `hop`-sample frames in dB relative to the loudest frame (silence: -300)."""
    n = len(x) // hop
    if n == 0:
        return np.zeros(0)
    power = (x[: n * hop].reshape(n, hop) ** 2).mean(axis=1)
    top = power.max()
    if top <= 0:
        return np.full(n, -300.0)
    return 10 * np.log10(np.maximum(power / top, 1e-30))


def islands(
    x: np.ndarray, sampling_rate: int, floor_db: float = -60.0, min_gap_s: float = 0.010
) -> list[tuple[int, int]]:
    """(start, stop) samples of the stretches of sound separated by at least `min_gap_s` of frames (1 ms)
    whose peak is `floor_db` or more below the clip's peak."""
    hop = max(1, sampling_rate // 1000)
    n = len(x) // hop
    if n == 0:
        return []
    peaks = np.abs(x[: n * hop]).reshape(n, hop).max(axis=1)
    loud = np.flatnonzero(peaks > np.abs(x).max() * 10 ** (floor_db / 20))
    if not len(loud):
        return []
    gap_frames = max(1, int(round(min_gap_s * 1000)))
    breaks = np.flatnonzero(np.diff(loud) > gap_frames)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    stops = np.concatenate([loud[breaks], [loud[-1]]]) + 1
    return [(int(a) * hop, min(len(x), int(b) * hop)) for a, b in zip(starts, stops, strict=True)]


def sliding_energy(x: np.ndarray, length: int) -> np.ndarray:
    cumulative = np.concatenate([[0.0], np.cumsum(x * x)])
    return cumulative[length:] - cumulative[:-length]


def match_score(x: np.ndarray, template: np.ndarray) -> np.ndarray:
    """Level-sensitive template match at every offset: 1 - |x_j - g T|^2 / |g T|^2, with g the gain of the
    clip's best normalised match (copies of one sound share a gain inside a clip). 1 for an exact copy, near 0
    for unrelated sound or silence, and low for a weak echo of the template such as its own decaying tail."""
    if len(x) < len(template):
        return np.zeros(0)
    cross = fftconvolve(x, template[::-1], mode="valid")
    window = sliding_energy(x, len(template))
    energy = float(template @ template)
    # the clip's gain is read where its best normalised match is, among windows loud enough for the ratio
    # to mean something (silent stretches give 0/0 up to rounding)
    loud = window > 1e-3 * window.max()
    ncc = np.where(loud, cross / np.sqrt(np.maximum(window * energy, 1e-30)), -np.inf)
    best = int(np.argmax(ncc))
    gain = cross[best] / energy
    if gain <= 0:
        return np.zeros(len(cross))
    return (2 * gain * cross - window) / (gain * gain * energy)


def max_normalized_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Largest normalised cross-correlation of two clips over all alignments (1 for identical sounds)."""
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    if norm == 0:
        return 0.0
    return float(fftconvolve(a, b[::-1], mode="full").max() / norm)


def tone_envelope(x: np.ndarray, sampling_rate: int, tone_hz: float) -> np.ndarray:
    """Amplitude envelope (analytic signal magnitude) smoothed over one period of the tone."""
    envelope = np.abs(hilbert(x))
    width = max(1, int(round(sampling_rate / max(tone_hz, 1.0))))
    return np.convolve(envelope, np.ones(width) / width, mode="same")


def on_off_runs(on: np.ndarray) -> list[tuple[bool, int]]:
    """(state, length) runs of a boolean signal, leading and trailing off-runs removed."""
    if not len(on):
        return []
    change = np.flatnonzero(np.diff(on.astype(np.int8))) + 1
    bounds = [0, *change.tolist(), len(on)]
    runs = [(bool(on[a]), b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    while runs and not runs[0][0]:
        runs.pop(0)
    while runs and not runs[-1][0]:
        runs.pop()
    return runs


def dominant_frequency(x: np.ndarray, sampling_rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x))
    spectrum[0] = 0.0
    return float(np.fft.rfftfreq(len(x), 1.0 / sampling_rate)[int(np.argmax(spectrum))])


def mfcc_frames(x: np.ndarray, sampling_rate: int) -> np.ndarray:
    """(frames, 12) MFCCs 1-12 (c0, the level, left out) at a 10 ms hop."""
    return (log_mel(x, sampling_rate) @ dct_matrix().T)[:, 1:13]


def dtw_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Dynamic time warping between two (frames, dims) sequences: the cheapest monotone alignment's summed
    Euclidean frame distance divided by the two lengths' sum (so it does not grow with duration)."""
    return dtw_distances([(a, b)])[0]


def dtw_distances(pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    """`dtw_distance` of many pairs at once: the recurrence acc[i, j] = min(acc[i-1, j], acc[i-1, j-1],
    acc[i, j-1]) + cost[i-1, j-1] filled one anti-diagonal at a time for all pairs together (the cells of a
    diagonal do not depend on each other). Pairs are padded to the longest; a padded cell never feeds a cell
    of the pair's own table, and min-then-add rounds as add-then-min does, so each distance is the one the
    row-by-row loop gives, bit for bit."""
    if not pairs:
        return []
    costs = [np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2) for a, b in pairs]
    rows, cols = max(c.shape[0] for c in costs), max(c.shape[1] for c in costs)
    cost = np.zeros((len(costs), rows, cols))
    for p, c in enumerate(costs):
        cost[p, : c.shape[0], : c.shape[1]] = c
    acc = np.full((len(costs), rows + 1, cols + 1), np.inf)
    acc[:, 0, 0] = 0.0
    for diagonal in range(2, rows + cols + 1):
        i = np.arange(max(1, diagonal - cols), min(rows, diagonal - 1) + 1)
        j = diagonal - i
        best = np.minimum(np.minimum(acc[:, i - 1, j], acc[:, i - 1, j - 1]), acc[:, i, j - 1])
        acc[:, i, j] = best + cost[:, i - 1, j - 1]
    return [float(acc[p, n, m] / (n + m)) for p, (n, m) in enumerate(c.shape for c in costs)]
