"""The transforms `--augment` accepts: name, level (unit and accepted range), what it needs, how it runs.

Every transform runs on one mono float32 clip with a generator of its own (seeding.py) and returns the new
samples and JSON-ready facts (for audiomentations transforms, the class and the parameters it used). The
level fixes a transform's strength; whatever else audiomentations draws (a mask position, an impulse
response, a room) comes from the clip's generator through `isolated_global_rng`. Noise (noises.py) and the
band-limiting filters run on the harness's own DSP: audiomentations would draw noise from numpy's global
legacy generator and design a new filter for every clip, which costs more than synthesizing some episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from audioeval.audio import dsp
from audioeval.augment import noises
from audioeval.augment.reverb import ir_bank
from audioeval.augment.seeding import isolated_global_rng
from audioeval.errors import DataError

MP3_BITRATES = (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 192, 224, 256, 320)
TELEPHONE_BAND_HZ = (300.0, 3400.0)
FILTER_ORDER = 4  # Butterworth: 24 dB per octave
FULL_SCALE = 0.999  # a noisy mix scaled for headroom peaks here, below the 16-bit grid's clipping point
CLIP_TOLERANCE_DB = 0.25

Runner = Callable[[np.ndarray, int, float | None, np.random.Generator], tuple[np.ndarray, dict[str, Any]]]


@dataclass(frozen=True)
class Transform:
    name: str
    summary: str
    run: Runner
    unit: str = ""
    low: float | None = None  # accepted level range (inclusive); None: no level
    high: float | None = None
    choices: tuple[float, ...] | None = None
    integer: bool = False
    harder: str | None = None  # "lower" or "higher": which way the level degrades more (plot axes)
    requires: tuple[str, str] | None = None  # (pip package, module imported)
    snr: bool = False  # additive noise at an SNR: the achieved SNR of every clip is measured

    @property
    def takes_level(self) -> bool:
        return self.low is not None or self.choices is not None

    def accepted(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(f"{c:g}" for c in self.choices) + f" {self.unit}".rstrip()
        if self.low is None:
            return "no level"
        kind = "an integer" if self.integer else "a number"
        return f"{kind} in [{self.low:g}, {self.high:g}] {self.unit}".rstrip()

    def level_error(self, level: float) -> str | None:
        if self.choices is not None:
            return None if level in self.choices else self.accepted()
        if self.integer and level != int(level):
            return self.accepted()
        assert self.low is not None and self.high is not None
        return None if self.low <= level <= self.high else self.accepted()


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, float | int | str | bool) or value is None:
        return value
    return str(value)


def _audiomentations(factory: Callable[[float, int], Any], pyroomacoustics: bool = False) -> Runner:
    """Run an audiomentations transform (built by `factory(level, sampling_rate)`, p=1) on one clip."""

    def run(samples: np.ndarray, rate: int, level: float | None, rng: np.random.Generator):
        if level is None:
            raise DataError("this transform needs a level, e.g. --augment name=level.")
        transform = factory(level, rate)
        with isolated_global_rng(rng, pyroomacoustics=pyroomacoustics):
            out = transform(samples, rate)
            facts = {"class": type(transform).__name__, "parameters": _json_ready(transform.parameters)}
        return np.asarray(out, dtype=np.float32), {"audiomentations": facts}

    return run


# --- factories (cached: building some transforms scans files or designs filters) ---------------------------


@lru_cache(maxsize=64)
def _impulse_response(rt60: float, rate: int) -> Any:
    from audiomentations import ApplyImpulseResponse

    return ApplyImpulseResponse(ir_path=list(ir_bank(rt60, rate)), p=1.0, leave_length_unchanged=True)


@lru_cache(maxsize=64)
def _room(rt60: float, rate: int) -> Any:
    from audiomentations import RoomSimulator

    return RoomSimulator(
        min_target_rt60=rt60,
        max_target_rt60=rt60,
        calculation_mode="rt60",
        leave_length_unchanged=True,
        p=1.0,
    )


def _telephone(samples: np.ndarray, rate: int, level: float | None, rng: np.random.Generator):
    low, high = TELEPHONE_BAND_HZ
    if rate / 2 <= high:
        raise DataError(f"telephone: a {rate} Hz clip has no content above {rate // 2} Hz to remove.")
    out = dsp.bandpass(samples, low, high, rate, FILTER_ORDER)
    return out, {"filter": f"Butterworth band-pass {low:g}-{high:g} Hz, order {FILTER_ORDER}"}


def _lowpass(samples: np.ndarray, rate: int, level: float | None, rng: np.random.Generator):
    assert level is not None
    if level >= rate / 2:
        raise DataError(
            f"lowpass_hz={level:g} is not below the Nyquist frequency of a {rate} Hz clip ({rate // 2} Hz); "
            "choose a lower cutoff."
        )
    return dsp.lowpass(samples, float(level), rate, FILTER_ORDER), {
        "filter": f"Butterworth low-pass {level:g} Hz, order {FILTER_ORDER}"
    }


@lru_cache(maxsize=64)
def _gain(db: float, rate: int) -> Any:
    from audiomentations import Gain

    return Gain(min_gain_db=db, max_gain_db=db, p=1.0)


@lru_cache(maxsize=64)
def _clipping(percent: float, rate: int) -> Any:
    from audiomentations import ClippingDistortion

    return ClippingDistortion(
        min_percentile_threshold=int(percent), max_percentile_threshold=int(percent), p=1.0
    )


@lru_cache(maxsize=64)
def _pitch(semitones: float, rate: int) -> Any:
    from audiomentations import PitchShift

    return PitchShift(min_semitones=semitones, max_semitones=semitones, p=1.0)


@lru_cache(maxsize=64)
def _stretch(rate_factor: float, rate: int) -> Any:
    from audiomentations import TimeStretch

    return TimeStretch(min_rate=rate_factor, max_rate=rate_factor, leave_length_unchanged=False, p=1.0)


@lru_cache(maxsize=64)
def _mp3(kbps: float, rate: int) -> Any:
    from audiomentations import Mp3Compression

    if kbps < 32 and rate > 24000:
        raise DataError(
            f"mp3_kbps={kbps:g}: MP3 bitrates below 32 kbps need clips at 24 kHz or less (got {rate} Hz)."
        )
    return Mp3Compression(min_bitrate=int(kbps), max_bitrate=int(kbps), backend="fast-mp3-augment", p=1.0)


@lru_cache(maxsize=64)
def _time_mask(fraction: float, rate: int) -> Any:
    from audiomentations import TimeMask

    return TimeMask(min_band_part=fraction, max_band_part=fraction, fade_duration=0.005, p=1.0)


def _generated_noise(source: Callable[[int, int, np.random.Generator], tuple[np.ndarray, dict]]) -> Runner:
    """Noise from one of our own sources (noises.py says why not audiomentations'), mixed at the level's
    SNR. A mix that goes past full scale is clipped when that moves its SNR by at most CLIP_TOLERANCE_DB (a
    few peaks), and otherwise scaled down as a whole (`headroom_gain`), which keeps the SNR relative to the
    scaled clip."""

    def run(samples: np.ndarray, rate: int, level: float | None, rng: np.random.Generator):
        assert level is not None
        noise, facts = source(len(samples), rate, rng)
        mixed = noises.mix_at_snr(samples, noise, float(level))
        peak = float(np.max(np.abs(mixed))) if len(mixed) else 0.0
        gain = 1.0
        if peak > 1.0:
            clipped = np.clip(mixed, -1.0, 1.0)
            snr = noises.measured_snr_db(samples, clipped)
            if snr is not None and abs(snr - float(level)) <= CLIP_TOLERANCE_DB:
                mixed = clipped
            else:
                gain = FULL_SCALE / peak
                mixed = mixed * np.float32(gain)
        return mixed, {"noise": facts, "headroom_gain": gain}

    return run


SNR_RANGE: dict[str, Any] = {"unit": "dB", "low": -30.0, "high": 60.0, "harder": "lower", "snr": True}

TRANSFORMS: dict[str, Transform] = {
    t.name: t
    for t in (
        Transform(
            "noise_snr",
            "white noise at an SNR",
            _generated_noise(partial(noises.colored, "white")),
            **SNR_RANGE,
        ),
        Transform(
            "pink_noise_snr",
            "pink noise (1/f) at an SNR",
            _generated_noise(partial(noises.colored, "pink")),
            **SNR_RANGE,
        ),
        Transform(
            "brown_noise_snr",
            "brown noise (1/f^2) at an SNR",
            _generated_noise(partial(noises.colored, "brown")),
            **SNR_RANGE,
        ),
        Transform(
            "babble_snr",
            f"babble of {noises.BABBLE_TALKERS} eSpeak NG talkers at an SNR",
            _generated_noise(noises.babble),
            **SNR_RANGE,
        ),
        Transform(
            "env_noise_snr",
            "procedural environmental noise (animal calls, rain) at an SNR",
            _generated_noise(noises.environment),
            **SNR_RANGE,
        ),
        Transform(
            "reverb_rt60",
            "reverberation from offline-synthesized impulse responses (ApplyImpulseResponse)",
            _audiomentations(lambda level, rate: _impulse_response(float(level), rate)),
            unit="s",
            low=0.1,
            high=3.0,
            harder="higher",
        ),
        Transform(
            "room_rt60",
            "a simulated shoebox room (RoomSimulator, pyroomacoustics)",
            _audiomentations(lambda level, rate: _room(float(level), rate), pyroomacoustics=True),
            unit="s",
            low=0.15,
            high=1.2,
            harder="higher",
            requires=("pyroomacoustics", "pyroomacoustics"),
        ),
        Transform(
            "telephone",
            "telephone band: 300-3400 Hz (Butterworth, 24 dB/octave)",
            _telephone,
        ),
        Transform(
            "lowpass_hz",
            "low-pass filter at a cutoff (Butterworth, 24 dB/octave)",
            _lowpass,
            unit="Hz",
            low=100.0,
            high=24000.0,
            harder="lower",
        ),
        Transform(
            "gain_db",
            "gain; past full scale the 16-bit grid clips (Gain)",
            _audiomentations(lambda level, rate: _gain(float(level), rate)),
            unit="dB",
            low=-60.0,
            high=40.0,
        ),
        Transform(
            "clip_percent",
            "clipping distortion: this percentage of samples clipped (ClippingDistortion)",
            _audiomentations(lambda level, rate: _clipping(float(level), rate)),
            unit="%",
            low=0.0,
            high=90.0,
            integer=True,
            harder="higher",
        ),
        Transform(
            "pitch_semitones",
            "pitch shift (PitchShift)",
            _audiomentations(lambda level, rate: _pitch(float(level), rate)),
            unit="semitones",
            low=-12.0,
            high=12.0,
        ),
        Transform(
            "time_stretch_rate",
            "time stretch, >1 faster and shorter (TimeStretch)",
            _audiomentations(lambda level, rate: _stretch(float(level), rate)),
            unit="x",
            low=0.5,
            high=2.0,
        ),
        Transform(
            "mp3_kbps",
            "MP3 encoding and decoding (Mp3Compression, LAME via fast-mp3-augment)",
            _audiomentations(lambda level, rate: _mp3(float(level), rate)),
            unit="kbps",
            choices=tuple(float(b) for b in MP3_BITRATES),
            harder="lower",
            requires=("fast-mp3-augment", "fast_mp3_augment"),
        ),
        Transform(
            "time_mask_fraction",
            "a dropout: this fraction of the clip silenced at a random place (TimeMask)",
            _audiomentations(lambda level, rate: _time_mask(float(level), rate)),
            unit="of the clip",
            low=0.0,
            high=0.9,
            harder="higher",
        ),
    )
}
