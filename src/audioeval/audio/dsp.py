"""Small signal helpers shared by the procedural synthesizers and the episode generators.

Everything works on mono float arrays; nothing here keeps state, so every function is a pure function of
its arguments (the episode generators rely on that for reproducibility).
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

import numpy as np

EPS = 1e-8


def scipy_signal() -> ModuleType:
    """scipy.signal, imported when first needed: it takes about a second to import, which a run that
    synthesizes nothing in its own process (a warm run, most of a cold one) never pays."""
    import scipy.signal

    return scipy.signal


def seconds_to_samples(seconds: float, sampling_rate: int) -> int:
    return int(round(float(seconds) * sampling_rate))


def rms(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def peak(x: np.ndarray) -> float:
    return float(np.max(np.abs(x))) if np.size(x) else 0.0


def normalize_peak(x: np.ndarray, target: float) -> np.ndarray:
    p = peak(x)
    return x * (target / p) if p > 0 else x


def cap_peak(x: np.ndarray, limit: float) -> np.ndarray:
    """Scale down only when the peak exceeds `limit`."""
    p = peak(x)
    return x * (limit / p) if p > limit else x


def fade(x: np.ndarray, sampling_rate: int, fade_in: float = 0.0, fade_out: float = 0.0) -> np.ndarray:
    """Linear fades (seconds) at either end; returns a new array."""
    y = np.array(x, dtype=np.float32, copy=True)
    n_in = min(len(y), seconds_to_samples(fade_in, sampling_rate))
    n_out = min(len(y), seconds_to_samples(fade_out, sampling_rate))
    if n_in > 0:
        y[:n_in] *= np.linspace(0.0, 1.0, n_in, endpoint=False, dtype=np.float32)
    if n_out > 0:
        y[len(y) - n_out :] *= np.linspace(1.0, 0.0, n_out, dtype=np.float32)
    return y


def trim_silence(x: np.ndarray, sampling_rate: int, top_db: float = 35.0, pad: float = 0.010) -> np.ndarray:
    """Cut leading and trailing samples quieter than peak * 10^(-top_db/20), keeping `pad` seconds."""
    p = peak(x)
    if p == 0:
        return np.asarray(x[:0], dtype=np.float32)
    loud = np.flatnonzero(np.abs(x) >= p * 10 ** (-top_db / 20))
    n_pad = seconds_to_samples(pad, sampling_rate)
    start = max(0, int(loud[0]) - n_pad)
    stop = min(len(x), int(loud[-1]) + 1 + n_pad)
    return np.asarray(x[start:stop], dtype=np.float32)


def resample(x: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    if source_rate == target_rate or not len(x):
        return np.asarray(x, dtype=np.float32)
    g = int(np.gcd(int(source_rate), int(target_rate)))
    return scipy_signal().resample_poly(x, target_rate // g, source_rate // g).astype(np.float32)


@lru_cache(maxsize=512)
def _sos(kind: str, low: float, high: float, order: int, sampling_rate: int) -> np.ndarray:
    nyq = sampling_rate / 2.0
    if kind == "band":
        lo = min(max(low, 10.0), nyq * 0.95)
        hi = min(max(high, lo * 1.05), nyq * 0.98)
        return scipy_signal().butter(order, [lo, hi], btype="band", fs=sampling_rate, output="sos")
    cutoff = min(max(low, 10.0), nyq * 0.98)
    return scipy_signal().butter(order, cutoff, btype=kind, fs=sampling_rate, output="sos")


def bandpass(x: np.ndarray, low: float, high: float, sampling_rate: int, order: int = 2) -> np.ndarray:
    sos = _sos("band", round(float(low), 3), round(float(high), 3), order, sampling_rate)
    return scipy_signal().sosfilt(sos, x).astype(np.float32)


def lowpass(x: np.ndarray, cutoff: float, sampling_rate: int, order: int = 2) -> np.ndarray:
    return (
        scipy_signal()
        .sosfilt(_sos("low", round(float(cutoff), 3), 0.0, order, sampling_rate), x)
        .astype(np.float32)
    )


def highpass(x: np.ndarray, cutoff: float, sampling_rate: int, order: int = 2) -> np.ndarray:
    return (
        scipy_signal()
        .sosfilt(_sos("high", round(float(cutoff), 3), 0.0, order, sampling_rate), x)
        .astype(np.float32)
    )


def exp_decay(n: int, sampling_rate: int, decay_s: float) -> np.ndarray:
    """exp(-t / decay_s): about -8.7 dB per `decay_s` seconds."""
    t = np.arange(n, dtype=np.float32) / np.float32(sampling_rate)
    return np.exp(-t / np.float32(max(decay_s, 1e-4))).astype(np.float32)


def sweep_phase(freqs: np.ndarray, sampling_rate: int) -> np.ndarray:
    """Phase (radians) of an oscillator whose instantaneous frequency is `freqs` (Hz, per sample)."""
    return (2 * np.pi / sampling_rate) * np.cumsum(np.asarray(freqs, dtype=np.float64))


def mix_at_snr(
    foreground: np.ndarray, background: np.ndarray, snr_db: float, peak_ratio_cap: float | None = None
) -> tuple[np.ndarray, float, bool]:
    """foreground + alpha * background with alpha setting the RMS ratio to `snr_db`; alpha is capped so the
    background peak stays at most `peak_ratio_cap` times the foreground peak. Returns (mix, alpha, capped)."""
    alpha = rms(foreground) / (rms(background) * 10 ** (snr_db / 20) + EPS)
    capped = False
    if peak_ratio_cap is not None:
        limit = peak_ratio_cap * peak(foreground) / (peak(background) + EPS)
        if alpha > limit:
            alpha, capped = limit, True
    return (foreground + alpha * background).astype(np.float32), float(alpha), capped


def fit_length(x: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Crop at a random offset when longer than n samples, tile when shorter. Returns (signal, offset)."""
    if len(x) >= n:
        offset = int(rng.integers(0, len(x) - n + 1))
        return np.asarray(x[offset : offset + n], dtype=np.float32), offset
    reps = int(np.ceil(n / max(1, len(x))))
    return np.tile(x, reps)[:n].astype(np.float32), 0
