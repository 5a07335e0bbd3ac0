"""Clip embeddings for the non-LLM baselines: log-mel / MFCC statistics computed with numpy.

    clip_features(samples, sampling_rate) -> 1-D float vector

The vector holds the mean and standard deviation over time of 20 MFCCs and of the log-mel energy, the
clip's log duration, log RMS, zero-crossing rate and spectral centroid. Fixed-length, so clips of any
duration compare directly.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

N_FFT = 512
HOP = 160
N_MELS = 40
N_MFCC = 20


@lru_cache(maxsize=8)
def mel_filterbank(sampling_rate: int, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    def hz_to_mel(f: np.ndarray) -> np.ndarray:
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m: np.ndarray) -> np.ndarray:
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    edges = mel_to_hz(
        np.linspace(hz_to_mel(np.array(0.0)), hz_to_mel(np.array(sampling_rate / 2)), n_mels + 2)
    )
    bins = np.fft.rfftfreq(n_fft, 1.0 / sampling_rate)
    bank = np.zeros((n_mels, len(bins)))
    for i in range(n_mels):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        rising = (bins - lo) / max(mid - lo, 1e-9)
        falling = (hi - bins) / max(hi - mid, 1e-9)
        bank[i] = np.clip(np.minimum(rising, falling), 0.0, None)
    return bank


@lru_cache(maxsize=2)
def dct_matrix(n_in: int = N_MELS, n_out: int = N_MFCC) -> np.ndarray:
    k = np.arange(n_out)[:, None]
    n = np.arange(n_in)[None, :]
    return np.sqrt(2.0 / n_in) * np.cos(np.pi * k * (2 * n + 1) / (2 * n_in))


def frames(samples: np.ndarray, n_fft: int = N_FFT, hop: int = HOP) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    if len(x) < n_fft:
        x = np.pad(x, (0, n_fft - len(x)))
    count = 1 + (len(x) - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(count)[:, None]
    return x[idx] * np.hanning(n_fft)[None, :]


def log_mel(samples: np.ndarray, sampling_rate: int) -> np.ndarray:
    """(time, mel) log energies."""
    power = np.abs(np.fft.rfft(frames(samples), axis=1)) ** 2
    return np.log(power @ mel_filterbank(sampling_rate).T + 1e-10)


def clip_features(samples: np.ndarray, sampling_rate: int) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    mel = log_mel(x, sampling_rate)
    mfcc = mel @ dct_matrix().T
    energy = mel.mean(axis=1)
    spectrum = np.abs(np.fft.rfft(frames(x), axis=1))
    freqs = np.fft.rfftfreq(N_FFT, 1.0 / sampling_rate)
    centroid = (spectrum @ freqs) / (spectrum.sum(axis=1) + 1e-10)
    zcr = np.mean(np.abs(np.diff(np.signbit(x).astype(np.int8)))) if len(x) > 1 else 0.0
    rms = np.sqrt(np.mean(x**2)) if len(x) else 0.0
    return np.concatenate(
        [
            mfcc.mean(axis=0),
            mfcc.std(axis=0),
            [
                energy.mean(),
                energy.std(),
                np.log(len(x) / sampling_rate + 1e-3),
                np.log(rms + 1e-6),
                zcr,
                centroid.mean() / 1000.0,
                centroid.std() / 1000.0,
            ],
        ]
    )
