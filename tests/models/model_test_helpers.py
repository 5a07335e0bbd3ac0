"""Requests and clips for the backend tests."""

from __future__ import annotations

import numpy as np

from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart

TINY_FAMILIES = ("qwen2_audio", "qwen2_5_omni", "qwen3_omni", "audio_flamingo3")


def tone(freq: float, seconds: float = 0.5, rate: int = 16000, amp: float = 0.3) -> AudioClip:
    t = np.arange(int(seconds * rate)) / rate
    return AudioClip.from_array(amp * np.sin(2 * np.pi * freq * t), rate)


def noise(seed: int, seconds: float = 0.5, rate: int = 16000) -> AudioClip:
    x = 0.2 * np.random.default_rng(seed).standard_normal(int(seconds * rate))
    return AudioClip.from_array(np.clip(x, -1, 1), rate)


def user_request(
    *parts, task: str = "t", k: int = 0, episode: int = 0, gen_kwargs=None, system: str | None = None
):
    converted = tuple(TextPart(p) if isinstance(p, str) else AudioPart(p) for p in parts)
    messages = (Message("user", converted),)
    if system is not None:
        messages = (Message("system", (TextPart(system),)), *messages)
    return Request(
        messages=messages, gen_kwargs=gen_kwargs or {"max_new_tokens": 6}, rid=RequestId(task, k, episode)
    )
