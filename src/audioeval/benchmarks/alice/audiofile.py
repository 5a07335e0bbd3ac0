"""Reading the audio files of a local Speech-IFEval / ALICE copy (WAV, FLAC, MP3 ...) as mono float32."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

import numpy as np

from audioeval.audio.dsp import resample
from audioeval.audio.wav import decode_wav
from audioeval.errors import DataError


def _decode(path: Path) -> tuple[np.ndarray, int]:
    try:
        import soundfile
    except ImportError:  # soundfile comes with librosa; without it only PCM WAV can be read
        if path.suffix.lower() != ".wav":
            raise DataError(
                f"{path}: reading {path.suffix} files needs the `soundfile` package (pip install soundfile)."
            ) from None
        return decode_wav(path.read_bytes(), str(path))
    try:
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as err:  # noqa: BLE001 - libsndfile raises several types for unreadable files
        raise DataError(f"{path}: the audio file cannot be decoded ({err}). Replace or remove it.") from err
    if data.size == 0:
        raise DataError(f"{path}: the audio file holds no samples. Replace or remove it.")
    return data.mean(axis=1), int(rate)


@lru_cache(maxsize=256)
def _load_cached(path: str, mtime_ns: int, size: int, sampling_rate: int) -> np.ndarray:
    samples, rate = _decode(Path(path))
    samples = np.array(resample(samples, rate, sampling_rate), dtype=np.float32)
    samples.setflags(write=False)
    return samples


def load_audio(path: Path, sampling_rate: int) -> np.ndarray:
    """Mono samples at `sampling_rate`; DataError naming the file when it is missing or undecodable."""
    try:
        stat = path.stat()
    except OSError as err:
        raise DataError(f"{path}: audio file not found ({err.strerror}).") from err
    return _load_cached(str(path), stat.st_mtime_ns, stat.st_size, int(sampling_rate))


@cache
def _check_cached(path: str, mtime_ns: int, size: int) -> str | None:
    try:
        _decode(Path(path))
    except DataError as err:
        return str(err)
    return None


def audio_problem(path: Path) -> str | None:
    """Why `path` cannot be used as audio (None when it decodes). Results are remembered per file version."""
    try:
        stat = path.stat()
    except OSError:
        return f"audio file {path} not found"
    if not path.is_file():
        return f"audio path {path} is not a file"
    return _check_cached(str(path), stat.st_mtime_ns, stat.st_size)
