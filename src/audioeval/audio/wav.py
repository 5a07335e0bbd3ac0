"""Minimal, dependency-free PCM16 WAV encoding and decoding.

Clips are stored on the 16-bit grid everywhere in the harness, so the samples a builder yields, the bytes
written to a Hub parquet file and what `datasets` decodes from them are the same numbers.
"""

from __future__ import annotations

import io
import struct
import wave

import numpy as np

from audioeval.errors import DataError

PCM16_SCALE = 32767.0


def to_pcm16(samples: np.ndarray) -> np.ndarray:
    """Clip to [-1, 1] and round (half to even) to int16. In float64, where scaling a float32 sample is exact;
    one buffer, worked in place (np.round/np.clip on fresh copies cost ten times as much: this runs for every
    clip a builder makes, and again for its hash and its WAV bytes)."""
    x = np.asarray(samples)
    if x.ndim != 1:
        raise ValueError(f"expected mono audio (1-D array), got shape {x.shape}")
    y = x.astype(np.float64)
    y *= PCM16_SCALE
    np.clip(y, -PCM16_SCALE, PCM16_SCALE, out=y)
    np.rint(y, out=y)
    return y.astype("<i2")


def quantize(samples: np.ndarray) -> np.ndarray:
    """Float32 samples that lie exactly on the 16-bit grid."""
    return (to_pcm16(samples).astype(np.float32) / np.float32(PCM16_SCALE)).astype(np.float32)


def encode_wav(samples: np.ndarray, sampling_rate: int) -> bytes:
    pcm = to_pcm16(samples).tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sampling_rate, sampling_rate * 2, 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm


def decode_wav(data: bytes, source: str = "<bytes>") -> tuple[np.ndarray, int]:
    """Decode a PCM WAV file (8/16/24/32-bit integer, any channel count; channels are averaged)."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            n_channels, width, rate, n = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
            raw = w.readframes(n)
    except (wave.Error, EOFError, struct.error) as err:
        raise DataError(f"{source}: not a readable PCM WAV file ({err}).") from err
    if width == 1:
        x = (np.frombuffer(raw, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif width == 2:
        x = np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(PCM16_SCALE)
    elif width == 3:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        x = v.astype(np.float32) / float(1 << 23)
    elif width == 4:
        x = np.frombuffer(raw, dtype="<i4").astype(np.float32) / float(1 << 31)
    else:
        raise DataError(f"{source}: unsupported WAV sample width {width} bytes.")
    if n_channels > 1:
        x = x.reshape(-1, n_channels).mean(axis=1)
    return x.astype(np.float32), rate
