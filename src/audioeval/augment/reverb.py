"""Reverberation: impulse responses synthesized offline, applied with audiomentations' ApplyImpulseResponse.

An impulse response for a reverberation time RT60 is a direct-path impulse, a few early reflections in the
first 50 ms and a late tail of Gaussian noise decaying by 60 dB over RT60 seconds, softened towards high
frequencies as rooms are. A bank of IR_BANK_SIZE responses per (RT60, sampling rate) is synthesized once from
fixed seeds and stored as WAV files under $AUDIOEVAL_CACHE/augment/impulse_responses/, where users can
listen to them; each clip draws one of the bank.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

from audioeval.audio.dsp import lowpass
from audioeval.seeds import stable_seed

IR_BANK_SIZE = 8
IR_VERSION = "v1"


def synthesize_ir(rt60: float, sampling_rate: int, rng: np.random.Generator) -> np.ndarray:
    n = max(16, int(round(min(1.5 * rt60, 6.0) * sampling_rate)))  # down to -90 dB
    t = np.arange(n) / sampling_rate
    envelope = 10 ** (-3.0 * t / rt60)  # -60 dB at t = rt60
    tail = rng.standard_normal(n) * envelope
    tail = lowpass(tail, float(rng.uniform(3000.0, 6000.0)), sampling_rate)
    onset = int(rng.uniform(0.002, 0.008) * sampling_rate)
    tail[:onset] = 0.0
    ir = np.asarray(tail, dtype=np.float64) * float(rng.uniform(0.05, 0.15))
    ir[0] = 1.0
    for _ in range(6):  # early reflections
        at = int(rng.uniform(0.003, 0.05) * sampling_rate)
        if at < n:
            ir[at] += float(rng.uniform(0.2, 0.6)) * float(rng.choice([-1.0, 1.0]))
    return (ir / np.max(np.abs(ir))).astype(np.float32)


def _bank_dir(rt60: float, sampling_rate: int) -> Path:
    root = Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval"))
    return root / "augment" / "impulse_responses" / IR_VERSION / f"rt60_{rt60:g}s_{sampling_rate}hz"


@lru_cache(maxsize=64)
def ir_bank(rt60: float, sampling_rate: int) -> tuple[str, ...]:
    """The bank's WAV files, synthesized on first use (written atomically: ranks may race, with equal bytes)."""
    import soundfile

    folder = _bank_dir(rt60, sampling_rate)
    paths = []
    for i in range(IR_BANK_SIZE):
        path = folder / f"ir_{i:02d}.wav"
        if not path.is_file():
            rng = np.random.default_rng(stable_seed("impulse-response", IR_VERSION, rt60, sampling_rate, i))
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.wav")
            soundfile.write(str(tmp), synthesize_ir(rt60, sampling_rate, rng), sampling_rate, subtype="FLOAT")
            os.replace(tmp, path)
        paths.append(str(path))
    return tuple(paths)
