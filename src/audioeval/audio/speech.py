"""Offline speech synthesis with eSpeak NG (the library and voice data ship in the `espeakng-loader` wheel),
called through ctypes in synchronous mode with a synth callback.

    synthesize(text, voice="en", variant="m3", rate=160, pitch=50, sampling_rate=16000, ssml=False) -> np.ndarray

Results are cached in memory and on disk (under $AUDIOEVAL_CACHE/speech, or ~/.cache/audioeval/speech), so a
benchmark that reuses the same utterances synthesizes each once. Output is deterministic for fixed inputs and
library version, mono float32 on the 16-bit grid.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.signal import resample_poly

from audioeval.audio.wav import decode_wav, encode_wav, quantize
from audioeval.errors import DataError

# espeak_AUDIO_OUTPUT, espeak_PARAMETER and flag values from speak_lib.h
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_PARAM = {"rate": 1, "volume": 2, "pitch": 3, "range": 4, "wordgap": 7}
_CHARS_UTF8 = 1
_SSML = 0x10
_EE_OK = 0

MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7")
FEMALE_VARIANTS = ("f1", "f2", "f3", "f4", "f5")

_SYNTH_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)


class _Engine:
    """The process-wide eSpeak NG instance (the library keeps global state, so calls are serialized)."""

    def __init__(self) -> None:
        import espeakng_loader

        self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        data = espeakng_loader.get_data_path().encode()
        self.native_rate = self.lib.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, ctypes.c_char_p(data), 0)
        if self.native_rate <= 0:
            raise DataError("eSpeak NG failed to initialise; reinstall the espeakng-loader package.")
        self._chunks: list[np.ndarray] = []
        self._callback = _SYNTH_CALLBACK(self._collect)
        self.lib.espeak_SetSynthCallback(self._callback)
        self.lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self.lock = threading.Lock()

    def _collect(self, wav: ctypes.POINTER(ctypes.c_short), n: int, _events: ctypes.c_void_p) -> int:
        if wav and n > 0:
            self._chunks.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
        return 0

    def synth(self, text: str, voice_name: str, params: dict[str, int], ssml: bool) -> np.ndarray:
        with self.lock:
            if self.lib.espeak_SetVoiceByName(voice_name.encode()) != _EE_OK:
                raise DataError(
                    f"eSpeak NG has no voice {voice_name!r}; use a language code such as en, fr, de, es, cmn."
                )
            for name, value in params.items():
                self.lib.espeak_SetParameter(_PARAM[name], int(value), 0)
            # Breathy (female) variants draw noise from eSpeak's generator, which is otherwise seeded
            # differently in every process: reseed so the same input gives the same audio everywhere.
            if hasattr(self.lib, "espeak_ng_SetRandSeed"):
                self.lib.espeak_ng_SetRandSeed(0)
            self._chunks = []
            data = text.encode("utf-8") + b"\0"
            buf = ctypes.create_string_buffer(data)
            flags = _CHARS_UTF8 | (_SSML if ssml else 0)
            status = self.lib.espeak_Synth(buf, len(data), 0, 0, 0, flags, None, None)
            if status != _EE_OK:
                raise DataError(f"eSpeak NG could not synthesise {text[:60]!r} (status {status}).")
            self.lib.espeak_Synchronize()
            chunks, self._chunks = self._chunks, []
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(chunks).astype(np.float32) / 32768.0


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    return _Engine()


def native_sampling_rate() -> int:
    return int(_engine().native_rate)


def _cache_dir() -> Path:
    root = Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval"))
    return root / "speech"


def _resample(x: np.ndarray, src: int, dst: int) -> np.ndarray:
    if src == dst or not len(x):
        return x
    g = np.gcd(src, dst)
    return resample_poly(x, dst // g, src // g).astype(np.float32)


def voice_name(language: str = "en", variant: str | None = None) -> str:
    return f"{language}+{variant}" if variant else language


@lru_cache(maxsize=4096)
def _synthesize_cached(
    text: str,
    voice: str,
    rate: int,
    pitch: int,
    pitch_range: int,
    volume: int,
    wordgap: int,
    sampling_rate: int,
    ssml: bool,
) -> np.ndarray:
    key = hashlib.sha256(
        repr((text, voice, rate, pitch, pitch_range, volume, wordgap, sampling_rate, ssml, "v2")).encode()
    ).hexdigest()
    path = _cache_dir() / key[:2] / f"{key}.wav"
    if path.is_file():
        samples, _ = decode_wav(path.read_bytes(), str(path))
        return samples
    engine = _engine()
    params = {"rate": rate, "pitch": pitch, "range": pitch_range, "volume": volume, "wordgap": wordgap}
    raw = engine.synth(text, voice, params, ssml)
    samples = quantize(_resample(raw, engine.native_rate, sampling_rate))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(encode_wav(samples, sampling_rate))
        os.replace(tmp, path)
    except OSError:
        pass  # the cache is an optimisation; synthesis already succeeded
    return samples


def synthesize(
    text: str,
    *,
    language: str = "en",
    variant: str | None = None,
    rate: int = 160,
    pitch: int = 50,
    pitch_range: int = 50,
    volume: int = 100,
    wordgap: int = 0,
    sampling_rate: int = 16000,
    ssml: bool = False,
) -> np.ndarray:
    """Speech for `text`: rate in words per minute (80-450), pitch and range 0-100, volume 0-200,
    wordgap in units of 10 ms. With ssml=True the text may carry SSML such as <break time="400ms"/> and
    <prosody pitch="+20%">. Returns a read-only float32 array at `sampling_rate`."""
    samples = _synthesize_cached(
        text,
        voice_name(language, variant),
        int(rate),
        int(pitch),
        int(pitch_range),
        int(volume),
        int(wordgap),
        int(sampling_rate),
        bool(ssml),
    )
    samples.setflags(write=False)
    return samples
