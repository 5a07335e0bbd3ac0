"""Procedural machine sounds and subtle anomalies, standing in for the DCASE Task 2 development sets.

A `MachineUnit` is one physical machine (its type and fixed design parameters, e.g. blade count and speed);
each recording of it (`render_normal`) varies its operating point a little (speed, level, background).
An anomalous recording is a normal one plus an additive fault component (`fault`), scaled so that its RMS
is `strength_db` relative to the normal recording:

- bearing_impulses: a periodic train of short high-frequency resonances at a fault frequency
- harmonic_shift: an extra tonal line at a non-harmonic ratio (or sub-harmonic) of the main frequency
- modulation: the machine's own sound amplitude-modulated at a slow or rotation-related rate
- friction_noise: band-limited scraping noise with a stick-slip envelope
- rattle: irregular clicks of a loose part
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from audioeval.audio.dsp import EPS, bandpass, highpass, lowpass, rms, scipy_signal, sweep_phase

MACHINE_TYPES = ("fan", "pump", "slider", "valve", "gearbox", "bearing", "toy_car", "toy_train")
ANOMALY_TYPES = ("bearing_impulses", "harmonic_shift", "modulation", "friction_noise", "rattle")
APPLICABLE_ANOMALIES: dict[str, tuple[str, ...]] = {
    "fan": ("bearing_impulses", "harmonic_shift", "modulation", "friction_noise"),
    "pump": ("bearing_impulses", "harmonic_shift", "modulation", "rattle"),
    "slider": ("friction_noise", "rattle", "modulation"),
    "valve": ("rattle", "friction_noise", "modulation"),
    "gearbox": ("bearing_impulses", "harmonic_shift", "modulation", "rattle"),
    "bearing": ("bearing_impulses", "friction_noise", "harmonic_shift", "modulation"),
    "toy_car": ("friction_noise", "harmonic_shift", "rattle", "modulation"),
    "toy_train": ("rattle", "friction_noise", "modulation", "harmonic_shift"),
}
TARGET_RMS = 0.08


@dataclass(frozen=True)
class MachineUnit:
    machine: str
    params: dict[str, float]

    def describe(self) -> dict[str, Any]:
        return {
            "source": "synth",
            "machine": self.machine,
            **{k: round(v, 4) for k, v in self.params.items()},
        }


def _u(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(rng.uniform(lo, hi))


def _resonator(x: np.ndarray, freq: float, decay_s: float, sr: int) -> np.ndarray:
    """A two-pole resonance at `freq` ringing down with time constant `decay_s`."""
    r = np.exp(-1.0 / (decay_s * sr))
    w = 2 * np.pi * min(freq, sr * 0.45) / sr
    return scipy_signal().lfilter([1.0 - r], [1.0, -2 * r * np.cos(w), r * r], x).astype(np.float32)


def _tones(phase: np.ndarray, amps: list[float]) -> np.ndarray:
    return sum(a * np.sin((h + 1) * phase + h) for h, a in enumerate(amps)).astype(np.float32)


def _wobble(rng: np.random.Generator, n: int, sr: int, depth: float, rate: float) -> np.ndarray:
    """Slow random speed fluctuation: 1 + depth * smoothed noise."""
    steps = max(4, int(n / sr * rate) + 2)
    knots = rng.standard_normal(steps)
    return 1 + depth * np.interp(np.arange(n), np.linspace(0, n - 1, steps), knots)


# ---- units -------------------------------------------------------------------------------------------


def draw_unit(machine: str, rng: np.random.Generator) -> MachineUnit:
    """A machine of type `machine` with its design parameters drawn from `rng`."""
    draws: dict[str, Callable[[], dict[str, float]]] = {
        "fan": lambda: {
            "rot": _u(rng, 15, 40),
            "blades": float(rng.integers(3, 8)),
            "air_cut": _u(rng, 1200, 3000),
        },
        "pump": lambda: {
            "rot": _u(rng, 20, 50),
            "vanes": float(rng.integers(5, 9)),
            "mains": float(rng.choice([50, 60])),
        },
        "slider": lambda: {
            "period": _u(rng, 0.8, 2.0),
            "whine": _u(rng, 150, 400),
            "duty": _u(rng, 0.5, 0.75),
        },
        "valve": lambda: {
            "period": _u(rng, 0.6, 2.0),
            "click_hz": _u(rng, 1500, 4000),
            "open": _u(rng, 0.2, 0.6),
        },
        "gearbox": lambda: {"rot": _u(rng, 10, 30), "teeth": float(rng.integers(15, 41))},
        "bearing": lambda: {"rot": _u(rng, 20, 60), "hiss_lo": _u(rng, 1500, 3000)},
        "toy_car": lambda: {"motor": _u(rng, 150, 450), "rumble": _u(rng, 0.2, 0.6)},
        "toy_train": lambda: {"motor": _u(rng, 100, 300), "clack_period": _u(rng, 0.3, 0.8)},
    }
    if machine not in draws:
        raise ValueError(f"unknown machine type {machine!r}; known: {', '.join(MACHINE_TYPES)}")
    params = draws[machine]()
    params["ambient_db"] = _u(rng, -30, -20)
    return MachineUnit(machine, params)


def main_frequency(unit: MachineUnit) -> float:
    """The machine's characteristic tonal frequency (Hz), used to place rotation-related faults."""
    p = unit.params
    return {
        "fan": p.get("rot", 20) * p.get("blades", 4),
        "pump": p.get("rot", 30) * p.get("vanes", 6),
        "slider": p.get("whine", 250),
        "valve": 1.0 / p.get("period", 1.0),
        "gearbox": p.get("rot", 20) * p.get("teeth", 20),
        "bearing": p.get("rot", 40),
        "toy_car": p.get("motor", 300),
        "toy_train": p.get("motor", 200),
    }[unit.machine]


def rotation_frequency(unit: MachineUnit) -> float:
    p = unit.params
    if "rot" in p:
        return p["rot"]
    if unit.machine in ("toy_car", "toy_train"):
        return p["motor"] / 10.0
    return 1.0 / p["period"]


def _fan(p, speed, rng, n, sr):
    wob = _wobble(rng, n, sr, 0.004, 2.0)
    phase = sweep_phase(p["rot"] * p["blades"] * speed * wob, sr)
    tonal = _tones(phase, [1.0, 0.5, 0.25, 0.12])
    air = lowpass(rng.standard_normal(n), p["air_cut"], sr) * (
        1 + 0.1 * np.sin(sweep_phase(p["rot"] * speed * wob, sr))
    )
    return 0.35 * tonal / 1.9 + air.astype(np.float32) / 3


def _pump(p, speed, rng, n, sr):
    t = np.arange(n) / sr
    hum = _tones(2 * np.pi * p["mains"] * 2 * t, [1.0, 0.4, 0.2])
    vane = sweep_phase(p["rot"] * p["vanes"] * speed * _wobble(rng, n, sr, 0.003, 1.0), sr)
    pulsation = _tones(vane, [1.0, 0.3])
    flow = bandpass(rng.standard_normal(n), 200, 2000, sr) * (1 + 0.3 * np.sin(vane)).astype(np.float32)
    return 0.3 * hum + 0.4 * pulsation + flow / 2.5


def _slider(p, speed, rng, n, sr):
    t = np.arange(n) / sr
    period = p["period"] / speed
    cycle = (t % period) / period
    moving = cycle < p["duty"]
    env = lowpass(moving.astype(np.float32), 30, sr)
    whine = _tones(sweep_phase(p["whine"] * speed * (0.7 + 0.3 * env), sr), [1.0, 0.5, 0.3])
    roll = bandpass(rng.standard_normal(n), 1000, 4000, sr)
    stops = np.zeros(n, dtype=np.float32)
    edges = np.flatnonzero(np.diff(moving.astype(np.int8)) == -1)
    stops[edges] = 1.0
    clicks = _resonator(stops, 1200, 0.01, sr) * 20
    return env * (0.5 * whine / 1.8 + 0.3 * roll) + 0.4 * clicks


def _valve(p, speed, rng, n, sr):
    t = np.arange(n) / sr
    period = p["period"] / speed
    cycle = (t % period) / period
    is_open = cycle < p["open"]
    env = lowpass(is_open.astype(np.float32), 40, sr)
    hiss = bandpass(rng.standard_normal(n), 1000, 5000, sr) * env
    events = np.zeros(n, dtype=np.float32)
    events[np.flatnonzero(np.diff(is_open.astype(np.int8)) != 0)] = 1.0
    clicks = _resonator(events, p["click_hz"], 0.008, sr) * 30
    floor = lowpass(rng.standard_normal(n), 500, sr) * 0.05
    return 0.4 * hiss + 0.6 * clicks + floor


def _gearbox(p, speed, rng, n, sr):
    rot_phase = sweep_phase(p["rot"] * speed * _wobble(rng, n, sr, 0.003, 1.0), sr)
    mesh = _tones(p["teeth"] * rot_phase, [1.0, 0.5, 0.25])
    mod = 1 + 0.15 * np.sin(rot_phase)
    noise = bandpass(rng.standard_normal(n), 300, 4000, sr) * 0.3
    return (0.6 * mesh * mod / 1.75).astype(np.float32) + noise


def _bearing(p, speed, rng, n, sr):
    rot_phase = sweep_phase(p["rot"] * speed, sr)
    hum = _tones(rot_phase, [1.0, 0.6, 0.2])
    hiss = bandpass(rng.standard_normal(n), p["hiss_lo"], min(p["hiss_lo"] * 2.5, sr * 0.45), sr)
    return 0.4 * hum / 1.8 + 0.5 * hiss * (1 + 0.05 * np.sin(rot_phase)).astype(np.float32)


def _toy_car(p, speed, rng, n, sr):
    f = p["motor"] * speed * _wobble(rng, n, sr, 0.02, 1.5)
    whine = _tones(sweep_phase(f, sr), [1.0, 0.6, 0.4, 0.2])
    gears = bandpass(rng.standard_normal(n), 800, 3000, sr) * 0.3
    rumble = lowpass(rng.standard_normal(n), 200, sr) * p["rumble"]
    return 0.4 * whine / 2.2 + gears + rumble


def _toy_train(p, speed, rng, n, sr):
    whine = _tones(sweep_phase(p["motor"] * speed * _wobble(rng, n, sr, 0.01, 1.0), sr), [1.0, 0.5, 0.3])
    clacks = np.zeros(n, dtype=np.float32)
    period = int(p["clack_period"] / speed * sr)
    start = int(rng.integers(0, period))
    for pos in range(start, n, period):
        clacks[pos] = 1.0
        if pos + int(0.06 * sr) < n:
            clacks[pos + int(0.06 * sr)] = 0.8
    clack = _resonator(clacks, 900, 0.012, sr) * 25
    rolling = bandpass(rng.standard_normal(n), 300, 2500, sr) * 0.25
    return 0.35 * whine / 1.8 + 0.5 * clack + rolling


_RENDER = {
    "fan": _fan,
    "pump": _pump,
    "slider": _slider,
    "valve": _valve,
    "gearbox": _gearbox,
    "bearing": _bearing,
    "toy_car": _toy_car,
    "toy_train": _toy_train,
}


def render_normal(
    unit: MachineUnit, seconds: float, sampling_rate: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, float]]:
    """One normal recording: the unit at a slightly varied operating point, with factory ambience."""
    n = int(round(seconds * sampling_rate))
    speed = 1 + _u(rng, -0.015, 0.015)
    x = np.asarray(_RENDER[unit.machine](unit.params, speed, rng, n, sampling_rate), dtype=np.float32)
    x = x - x.mean()
    ambient = lowpass(rng.standard_normal(n), 1000, sampling_rate) + 0.3 * rng.standard_normal(n).astype(
        np.float32
    )
    x = x / (rms(x) + EPS)
    x = x + ambient / (rms(ambient) + EPS) * 10 ** (unit.params["ambient_db"] / 20)
    level_db = _u(rng, -1.0, 1.0)
    x = x * (TARGET_RMS * 10 ** (level_db / 20) / (rms(x) + EPS))
    return x.astype(np.float32), {"speed": round(speed, 5), "level_db": round(level_db, 3)}


# ---- faults --------------------------------------------------------------------------------------------


def _impulses(n: int, sr: int, rate: float, jitter: float, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(n, dtype=np.float32)
    period = sr / rate
    position = float(rng.uniform(0, period))
    while position < n:
        out[int(position)] = 1.0
        position += period * (1 + jitter * float(rng.standard_normal()))
    return out


def fault(
    kind: str, unit: MachineUnit, normal: np.ndarray, sampling_rate: int, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, float]]:
    """The additive fault component for a recording `normal` of `unit` (unit RMS) and its parameters."""
    sr, n = sampling_rate, len(normal)
    t = np.arange(n) / sr
    rot = rotation_frequency(unit)
    info: dict[str, float] = {}
    if kind == "bearing_impulses":
        rate = rot * _u(rng, 3.0, 8.0) if unit.machine not in ("slider", "valve") else _u(rng, 5, 15)
        resonance = _u(rng, 2500, min(5000, sr * 0.4))
        pulses = _impulses(n, sr, rate, 0.01, rng) * (1 + 0.5 * np.sin(2 * np.pi * rot * t)).astype(
            np.float32
        )
        delta = _resonator(pulses, resonance, _u(rng, 0.001, 0.003), sr)
        info = {"fault_hz": rate, "resonance_hz": resonance}
    elif kind == "harmonic_shift":
        base = main_frequency(unit)
        base = base if base > 40 else _u(rng, 200, 800)
        ratio = float(rng.choice([0.5, 1.5, 2.5, 3.5])) * _u(rng, 0.98, 1.02)
        f = min(base * ratio, sr * 0.4)
        delta = np.sin(sweep_phase(f * _wobble(rng, n, sr, 0.003, 1.0), sr)).astype(np.float32)
        info = {"tone_hz": f, "ratio": ratio}
    elif kind == "modulation":
        f_mod = rot * _u(rng, 0.25, 0.5) if rot > 4 else _u(rng, 1.0, 5.0)
        delta = (normal * np.sin(2 * np.pi * f_mod * t + _u(rng, 0, 6.28))).astype(np.float32)
        info = {"modulation_hz": f_mod}
    elif kind == "friction_noise":
        lo = _u(rng, 2000, 3500)
        band = bandpass(rng.standard_normal(n), lo, min(lo * 1.8, sr * 0.45), sr)
        slip = _u(rng, 5, 20)
        env = lowpass((np.sin(2 * np.pi * slip * t) > _u(rng, -0.2, 0.5)).astype(np.float32), 60, sr)
        delta = band * env
        info = {"band_lo_hz": lo, "stick_slip_hz": slip}
    elif kind == "rattle":
        rate = _u(rng, 8, 25)
        events = (rng.random(n) < rate / sr).astype(np.float32) * rng.uniform(0.3, 1.0, n).astype(np.float32)
        resonance = _u(rng, 1000, 3000)
        delta = highpass(_resonator(events, resonance, _u(rng, 0.003, 0.008), sr), 400, sr)
        info = {"rate_hz": rate, "resonance_hz": resonance}
    else:
        raise ValueError(f"unknown anomaly type {kind!r}; known: {', '.join(ANOMALY_TYPES)}")
    delta = delta - delta.mean()
    return (delta / (rms(delta) + EPS)).astype(np.float32), {k: round(float(v), 3) for k, v in info.items()}


def render_anomalous(
    unit: MachineUnit,
    kind: str,
    strength_db: float,
    seconds: float,
    sampling_rate: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, dict[str, Any]]:
    """A recording of `unit` with fault `kind` at `strength_db` (fault RMS relative to the machine's)."""
    normal, info = render_normal(unit, seconds, sampling_rate, rng)
    delta, fault_info = fault(kind, unit, normal, sampling_rate, rng)
    x = normal + delta * (rms(normal) * 10 ** (strength_db / 20))
    return x.astype(np.float32), {**info, "anomaly": kind, "strength_db": strength_db, **fault_info}
