"""Offline speech synthesis with eSpeak NG (the library and voice data ship in the `espeakng-loader` wheel),
called through ctypes in synchronous mode with a synth callback — in a helper process that forks a fresh child
per utterance (espeak_zygote.py), because the library carries state from one utterance to the next.

    synthesize(text, voice="en", variant="m3", rate=160, pitch=50, sampling_rate=16000, ssml=False) -> np.ndarray

Results are cached in memory and on disk (under $AUDIOEVAL_CACHE/speech, or ~/.cache/audioeval/speech), so a
benchmark that reuses the same utterances synthesizes each once. Output is deterministic for fixed inputs and
library version, mono float32 on the 16-bit grid.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import struct
import subprocess
import sys
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from audioeval.audio.dsp import resample
from audioeval.audio.wav import decode_wav, encode_wav, quantize
from audioeval.errors import DataError

MALE_VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7")
FEMALE_VARIANTS = ("f1", "f2", "f3", "f4", "f5")


class _Engine:
    """The eSpeak NG helper process (see espeak_zygote.py): one per process, started on first use."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "audioeval.audio.espeak_zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both are pipes
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        header = self.stdout.read(4)
        if len(header) != 4 or struct.unpack("<i", header)[0] <= 0:
            raise DataError(
                "eSpeak NG failed to initialise (python -m audioeval.audio.espeak_zygote shows why); "
                "reinstall the espeakng-loader package."
            )
        self.native_rate = struct.unpack("<i", header)[0]
        self.lock = threading.Lock()
        atexit.register(self.close)

    def synth(self, text: str, voice_name: str, params: dict[str, int], ssml: bool) -> np.ndarray:
        request = json.dumps({"text": text, "voice": voice_name, "params": params, "ssml": ssml}) + "\n"
        with self.lock:
            if self.proc.poll() is not None:
                raise DataError("the eSpeak NG helper process has stopped; restart the run.")
            self.stdin.write(request.encode())
            self.stdin.flush()
            status, length = struct.unpack("<BQ", self.stdout.read(9))
            payload = self.stdout.read(length)
        if status != 0:
            message = payload.decode(errors="replace")
            if "no voice" in message:
                message += (
                    "; use a language code such as en, fr, de, es, cmn, optionally with +m1..m7 or +f1..f5"
                )
            raise DataError(f"{message} (text {text[:60]!r}).")
        return np.frombuffer(payload, dtype="<i2").astype(np.float32) / 32768.0

    def close(self) -> None:
        if self.proc.poll() is None:
            self.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    return _Engine()


def native_sampling_rate() -> int:
    return int(_engine().native_rate)


def _cache_dir() -> Path:
    root = Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval"))
    return root / "speech"


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
        repr((text, voice, rate, pitch, pitch_range, volume, wordgap, sampling_rate, ssml, "v3")).encode()
    ).hexdigest()
    path = _cache_dir() / key[:2] / f"{key}.wav"
    if path.is_file():
        samples, _ = decode_wav(path.read_bytes(), str(path))
        return samples
    engine = _engine()
    params = {"rate": rate, "pitch": pitch, "range": pitch_range, "volume": volume, "wordgap": wordgap}
    raw = engine.synth(text, voice, params, ssml)
    samples = quantize(resample(raw, engine.native_rate, sampling_rate))
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
