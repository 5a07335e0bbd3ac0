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


def samples_of(pcm: np.ndarray) -> np.ndarray:
    """The float32 samples on the 16-bit grid that PCM16 values stand for (to_pcm16 gives the values back)."""
    samples = np.asarray(pcm).astype(np.float32)
    samples /= np.float32(PCM16_SCALE)
    return samples


def quantize(samples: np.ndarray) -> np.ndarray:
    """Float32 samples that lie exactly on the 16-bit grid."""
    return samples_of(to_pcm16(samples))


def encode_wav(samples: np.ndarray, sampling_rate: int) -> bytes:
    return pcm16_wav(to_pcm16(samples), sampling_rate)


def pcm16_wav(pcm: np.ndarray, sampling_rate: int) -> bytes:
    """A mono 16-bit WAV file of these PCM16 samples, as they are: a 44-byte header, then the samples."""
    data = np.ascontiguousarray(pcm, dtype="<i2").tobytes()
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sampling_rate, sampling_rate * 2, 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(data)) + data


# The sampling rates a WAV answer may declare: a rate of 0 would divide by zero wherever the clip's duration is
# needed, and one above 2^31 / 2 does not fit the header's byte-rate field.
MIN_RATE, MAX_RATE = 1_000, 384_000


def read_pcm16_wav(data: bytes) -> tuple[np.ndarray, int]:
    """The PCM16 samples (mono: channels averaged) and rate of a 16-bit PCM WAV, checked completely: a readable
    header, 16-bit samples, a rate in [MIN_RATE, MAX_RATE], at least one frame, and every frame the header
    announces present. ValueError saying what is wrong otherwise. A mono file's samples are its bytes, as sent."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            channels, width, rate, frames = (
                w.getnchannels(),
                w.getsampwidth(),
                w.getframerate(),
                w.getnframes(),
            )
            raw = w.readframes(frames)
    except (wave.Error, EOFError, struct.error, ValueError) as err:
        raise ValueError(f"undecodable WAV audio ({err})") from err
    if width != 2:
        raise ValueError(f"WAV audio of {8 * width}-bit samples; expected 16-bit PCM")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError(f"WAV audio at {rate:,} Hz; expected {MIN_RATE:,} to {MAX_RATE:,} Hz")
    if frames == 0:
        raise ValueError("WAV audio with no samples")
    if len(raw) < frames * channels * width:
        raise ValueError(
            f"truncated WAV audio: the header says {frames} frames, {len(raw) // (channels * width)} arrived"
        )
    pcm = np.frombuffer(raw, dtype="<i2")
    if channels > 1:
        pcm = to_pcm16(pcm.reshape(-1, channels).astype(np.float64).mean(axis=1) / PCM16_SCALE)
    return pcm, rate


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
