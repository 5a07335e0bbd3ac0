"""A procedural bank of percussive one-shots: 17 families (kick, snare, closed and open hat, tom, clap,
cowbell, rim, bell, clave, woodblock, crash, triangle, conga, shaker, zap, tabla-like) with randomized
parameters, 40 timbres per family (680 in all).

The bank is a fixed, seedless catalogue like a sample library: timbre `i` is a pure function of `i`
(`timbre(i)`), rendered by `render(i, sampling_rate)`. Every sound starts with its attack at sample 0,
decays without internal gaps (a clap's bursts are at most 14 ms apart), ends in a 5 ms fade, lasts at most
1 s and peaks between 0.35 and 0.9.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from audioeval.audio.dsp import bandpass, exp_decay, fade, highpass, normalize_peak, sweep_phase

BANK_SEED = 0x0A5C10B
PER_FAMILY = 40
MAX_SECONDS = 1.0

_Generator = Callable[[np.random.Generator, dict[str, Any], int], np.ndarray]


@dataclass(frozen=True)
class Timbre:
    index: int
    family: str
    params: dict[str, float]

    def describe(self) -> dict[str, Any]:
        return {"source": "synth", "timbre": self.index, "family": self.family}


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _t(n: int, sr: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) / sr


def _noise(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n).astype(np.float32)


def _square(phase: np.ndarray) -> np.ndarray:
    return np.sign(np.sin(phase)).astype(np.float32)


_METAL_RATIOS = (1.0, 1.3348, 1.4755, 1.6818, 1.9307, 2.5452)


def _metal(p: dict[str, Any], n: int, sr: int) -> np.ndarray:
    t = _t(n, sr)
    return np.asarray(sum(_square(2 * np.pi * p["base"] * r * t) for r in _METAL_RATIOS)) / len(_METAL_RATIOS)


# ---- families: parameter draws and renderers ------------------------------------------------------------


def _kick_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.25, 0.7),
        "f_end": _u(rng, 40, 70),
        "f_start": _u(rng, 120, 260),
        "sweep": _u(rng, 0.015, 0.06),
        "decay": _u(rng, 0.08, 0.25),
        "click": _u(rng, 0.05, 0.4),
        "drive": _u(rng, 1.0, 3.0),
    }


def _kick(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    f = p["f_end"] + (p["f_start"] - p["f_end"]) * np.exp(-t / p["sweep"])
    body = np.sin(sweep_phase(f, sr)).astype(np.float32) * exp_decay(n, sr, p["decay"])
    click = highpass(_noise(rng, n), 2000, sr) * exp_decay(n, sr, 0.004)
    return np.tanh(p["drive"] * (body + p["click"] * click)).astype(np.float32)


def _tom_params(rng: np.random.Generator) -> dict[str, float]:
    f_end = _u(rng, 80, 260)
    return {
        "dur": _u(rng, 0.2, 0.6),
        "f_end": f_end,
        "f_start": f_end * _u(rng, 1.15, 1.8),
        "sweep": _u(rng, 0.03, 0.1),
        "decay": _u(rng, 0.08, 0.25),
        "noise": _u(rng, 0.05, 0.25),
    }


def _tom(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    f = p["f_end"] + (p["f_start"] - p["f_end"]) * np.exp(-t / p["sweep"])
    ph = sweep_phase(f, sr)
    body = (np.sin(ph) + 0.3 * np.sin(1.5 * ph)).astype(np.float32) * exp_decay(n, sr, p["decay"])
    hit = bandpass(_noise(rng, n), 300, 3000, sr) * exp_decay(n, sr, 0.02)
    return body + p["noise"] * hit


def _snare_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.15, 0.4),
        "tone": _u(rng, 150, 260),
        "tone_decay": _u(rng, 0.03, 0.1),
        "noise_decay": _u(rng, 0.05, 0.16),
        "low": _u(rng, 700, 2000),
        "high": _u(rng, 4500, 7500),
        "mix": _u(rng, 0.5, 0.85),
    }


def _snare(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    tone = (np.sin(2 * np.pi * p["tone"] * t) + 0.5 * np.sin(2 * np.pi * 1.6 * p["tone"] * t)).astype(
        np.float32
    ) * exp_decay(n, sr, p["tone_decay"])
    rattle = bandpass(_noise(rng, n), p["low"], p["high"], sr) * exp_decay(n, sr, p["noise_decay"])
    rattle = normalize_peak(rattle, 1.0)
    return (1 - p["mix"]) * tone / 1.5 + p["mix"] * rattle


def _hat_params(open_: bool) -> Callable[[np.random.Generator], dict[str, float]]:
    def draw(rng: np.random.Generator) -> dict[str, float]:
        return {
            "dur": _u(rng, 0.3, 0.8) if open_ else _u(rng, 0.05, 0.15),
            "base": _u(rng, 280, 460),
            "decay": _u(rng, 0.08, 0.3) if open_ else _u(rng, 0.01, 0.04),
            "cut": _u(rng, 4000, 6500),
            "noise": _u(rng, 0.2, 0.7),
        }

    return draw


def _hat(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    raw = (1 - p["noise"]) * _metal(p, n, sr) + p["noise"] * _noise(rng, n) * 0.5
    return highpass(raw, p["cut"], sr, order=4) * exp_decay(n, sr, p["decay"])


def _crash_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.8, 1.0),
        "base": _u(rng, 350, 600),
        "decay": _u(rng, 0.25, 0.5),
        "cut": _u(rng, 2500, 4000),
        "noise": _u(rng, 0.4, 0.8),
    }


def _clap_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.2, 0.4),
        "bursts": float(rng.integers(3, 5)),
        "spacing": _u(rng, 0.006, 0.014),
        "tail": _u(rng, 0.05, 0.15),
        "center": _u(rng, 900, 1800),
        "width": _u(rng, 1.5, 3.0),
    }


def _clap(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    noise = bandpass(_noise(rng, n), p["center"] / p["width"], p["center"] * p["width"], sr)
    env = np.zeros(n, dtype=np.float32)
    step = int(p["spacing"] * sr)
    for b in range(int(p["bursts"])):
        start = b * step
        env[start:] = np.maximum(env[start:], exp_decay(n - start, sr, 0.004))
    last = int(p["bursts"] - 1) * step
    env[last:] = np.maximum(env[last:], 0.8 * exp_decay(n - last, sr, p["tail"]))
    return noise * env


def _cowbell_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.2, 0.5),
        "f1": _u(rng, 480, 640),
        "ratio": _u(rng, 1.4, 1.55),
        "decay": _u(rng, 0.06, 0.2),
        "low": _u(rng, 600, 900),
        "high": _u(rng, 2000, 3500),
    }


def _cowbell(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    tone = _square(2 * np.pi * p["f1"] * t) + _square(2 * np.pi * p["f1"] * p["ratio"] * t)
    env = 0.6 * exp_decay(n, sr, 0.012) + 0.4 * exp_decay(n, sr, p["decay"])
    return bandpass(tone, p["low"], p["high"], sr) * env


def _rim_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.05, 0.12),
        "tone": _u(rng, 1400, 2600),
        "decay": _u(rng, 0.006, 0.02),
        "noise": _u(rng, 0.2, 0.6),
    }


def _rim(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    tone = np.sin(2 * np.pi * p["tone"] * t).astype(np.float32) * exp_decay(n, sr, p["decay"])
    click = highpass(_noise(rng, n), 1500, sr) * exp_decay(n, sr, 0.003)
    return tone + p["noise"] * click


_BELL_RATIOS = (0.56, 0.92, 1.19, 1.70, 2.00, 2.74, 3.00, 3.76, 4.07)


def _bell_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.6, 1.0),
        "base": _u(rng, 300, 1100),
        "decay": _u(rng, 0.2, 0.45),
        "bright": _u(rng, 0.3, 0.9),
    }


def _bell(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    out = np.zeros(n, dtype=np.float32)
    for i, r in enumerate(_BELL_RATIOS):
        f = p["base"] * r
        if f >= sr * 0.45:
            continue
        amp = p["bright"] ** i
        out += amp * np.sin(2 * np.pi * f * t + i).astype(np.float32) * exp_decay(n, sr, p["decay"] / r)
    return out


def _clave_params(rng: np.random.Generator) -> dict[str, float]:
    return {"dur": _u(rng, 0.08, 0.2), "tone": _u(rng, 1800, 2800), "decay": _u(rng, 0.012, 0.04)}


def _clave(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    return np.sin(2 * np.pi * p["tone"] * t).astype(np.float32) * exp_decay(n, sr, p["decay"])


def _woodblock_params(rng: np.random.Generator) -> dict[str, float]:
    return {"dur": _u(rng, 0.1, 0.2), "center": _u(rng, 700, 1600), "decay": _u(rng, 0.015, 0.05)}


def _woodblock(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    body = np.sin(2 * np.pi * p["center"] * t).astype(np.float32) * exp_decay(n, sr, p["decay"])
    knock = bandpass(_noise(rng, n), p["center"] * 0.8, p["center"] * 1.25, sr) * exp_decay(n, sr, 0.01)
    return body + 0.5 * normalize_peak(knock, 1.0)


def _triangle_params(rng: np.random.Generator) -> dict[str, float]:
    return {"dur": _u(rng, 0.7, 1.0), "f0": _u(rng, 1500, 3200), "decay": _u(rng, 0.25, 0.5)}


def _triangle(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    out = np.zeros(n, dtype=np.float32)
    for r, a in ((1.0, 1.0), (2.76, 0.5), (5.4, 0.25)):
        if p["f0"] * r < sr * 0.45:
            out += (
                a * np.sin(2 * np.pi * p["f0"] * r * t).astype(np.float32) * exp_decay(n, sr, p["decay"] / r)
            )
    return out


def _conga_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.2, 0.45),
        "f": _u(rng, 180, 450),
        "bend": _u(rng, 1.03, 1.15),
        "decay": _u(rng, 0.05, 0.15),
        "slap": _u(rng, 0.0, 0.4),
    }


def _conga(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    f = p["f"] * (1 + (p["bend"] - 1) * np.exp(-t / 0.02))
    ph = sweep_phase(f, sr)
    body = (np.sin(ph) + 0.25 * np.sin(1.5 * ph)).astype(np.float32) * exp_decay(n, sr, p["decay"])
    slap = bandpass(_noise(rng, n), 1000, 5000, sr) * exp_decay(n, sr, 0.006)
    return body + p["slap"] * slap


def _shaker_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.1, 0.25),
        "attack": _u(rng, 0.008, 0.02),
        "decay": _u(rng, 0.03, 0.08),
        "cut": _u(rng, 3000, 6000),
    }


def _shaker(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    n_att = max(1, int(p["attack"] * sr))
    env = np.concatenate([np.linspace(0.2, 1.0, n_att), exp_decay(n - n_att, sr, p["decay"])])
    return highpass(_noise(rng, n), p["cut"], sr, order=4) * env.astype(np.float32)


def _zap_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.15, 0.35),
        "f_start": _u(rng, 1200, 3000),
        "f_end": _u(rng, 80, 300),
        "sweep": _u(rng, 0.02, 0.08),
        "decay": _u(rng, 0.05, 0.15),
    }


def _zap(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    f = p["f_end"] + (p["f_start"] - p["f_end"]) * np.exp(-t / p["sweep"])
    return np.sin(sweep_phase(f, sr)).astype(np.float32) * exp_decay(n, sr, p["decay"])


def _tabla_params(rng: np.random.Generator) -> dict[str, float]:
    return {
        "dur": _u(rng, 0.3, 0.7),
        "f": _u(rng, 250, 600),
        "decay": _u(rng, 0.1, 0.3),
        "glide": _u(rng, 0.9, 1.1),
    }


def _tabla(rng: np.random.Generator, p: dict[str, Any], sr: int) -> np.ndarray:
    n = int(p["dur"] * sr)
    t = _t(n, sr)
    f = p["f"] * (1 + (p["glide"] - 1) * (1 - np.exp(-t / 0.1)))
    ph = sweep_phase(f, sr)
    tone = sum(a * np.sin(r * ph) for r, a in ((1, 1.0), (2, 0.5), (3, 0.3), (4, 0.2)))
    return tone.astype(np.float32) * exp_decay(n, sr, p["decay"])


FAMILIES: dict[str, tuple[Callable[[np.random.Generator], dict[str, float]], _Generator]] = {
    "kick": (_kick_params, _kick),
    "snare": (_snare_params, _snare),
    "closed_hat": (_hat_params(False), _hat),
    "open_hat": (_hat_params(True), _hat),
    "tom": (_tom_params, _tom),
    "clap": (_clap_params, _clap),
    "cowbell": (_cowbell_params, _cowbell),
    "rim": (_rim_params, _rim),
    "bell": (_bell_params, _bell),
    "clave": (_clave_params, _clave),
    "woodblock": (_woodblock_params, _woodblock),
    "crash": (_crash_params, _hat),
    "triangle": (_triangle_params, _triangle),
    "conga": (_conga_params, _conga),
    "shaker": (_shaker_params, _shaker),
    "zap": (_zap_params, _zap),
    "tabla": (_tabla_params, _tabla),
}
FAMILY_NAMES = tuple(FAMILIES)
BANK_SIZE = PER_FAMILY * len(FAMILY_NAMES)


def timbre(index: int) -> Timbre:
    """The bank entry `index` (0 <= index < BANK_SIZE): its family and parameters."""
    if not 0 <= index < BANK_SIZE:
        raise IndexError(f"timbre index {index} outside the bank (0..{BANK_SIZE - 1})")
    family = FAMILY_NAMES[index % len(FAMILY_NAMES)]
    rng = np.random.default_rng([BANK_SEED, index])
    params = FAMILIES[family][0](rng)
    params["peak"] = _u(rng, 0.35, 0.9)
    return Timbre(index=index, family=family, params=params)


def family_of(index: int) -> str:
    return FAMILY_NAMES[index % len(FAMILY_NAMES)]


@lru_cache(maxsize=2048)
def _render_cached(index: int, sampling_rate: int) -> np.ndarray:
    t = timbre(index)
    rng = np.random.default_rng([BANK_SEED, index, 1])
    raw = np.asarray(FAMILIES[t.family][1](rng, t.params, sampling_rate), dtype=np.float32)
    raw = raw[: int(MAX_SECONDS * sampling_rate)]
    # End where the sound has decayed by 60 dB, then fade the last 5 ms to silence.
    level = np.abs(raw)
    above = np.flatnonzero(level >= level.max() * 1e-3)
    raw = raw[: int(above[-1]) + 1] if len(above) else raw
    out = fade(raw, sampling_rate, fade_in=0.0005, fade_out=0.005)
    out = normalize_peak(out, t.params["peak"]).astype(np.float32)
    out.setflags(write=False)
    return out


def render(index: int, sampling_rate: int = 16000) -> np.ndarray:
    """The samples of bank entry `index` (read-only float32)."""
    return _render_cached(int(index), int(sampling_rate))


def draw_index(rng: np.random.Generator, exclude_families: tuple[str, ...] = ()) -> int:
    """A uniformly drawn bank index, optionally avoiding some families."""
    allowed = [i for i, f in enumerate(FAMILY_NAMES) if f not in exclude_families]
    family = allowed[int(rng.integers(len(allowed)))]
    return family + len(FAMILY_NAMES) * int(rng.integers(PER_FAMILY))
