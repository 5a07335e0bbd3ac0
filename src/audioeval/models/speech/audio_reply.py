"""Audio answers over Chat Completions: what `--model openai --model_args audio_output=true` adds to a request
and how it reads the reply.

Request: `modalities: ["text", "audio"]` and `audio: {voice, format}`; `format` is `wav` or `pcm16` (16-bit mono
24 kHz little-endian, the only format OpenAI streams), the two the harness decodes without FFmpeg. Few-shot
demonstrations stay text assistant turns: an assistant audio id expires after about an hour (400
`audio_not_found`), so a demo never refers to one.

Reply, in either of two shapes:
- OpenAI: `choices[0].message.audio = {id, data (base64), expires_at, transcript}`, `content` null;
- vLLM-Omni (`vllm serve ... --omni`): two choices, `choices[0].message.content` the text and
  `choices[1].message.audio.data` a WAV at 24 kHz with an empty transcript; the text is then the transcript.

A reply that holds no audio, audio that is not base64 or not the asked format, or a WAV that is not checked
whole (16-bit PCM, a rate from 1 to 384 kHz, at least one frame, every frame its header announces) is a
malformed reply (ValueError): retried, then a counted failure with that reason, and never cached. The
samples are kept as sent (-32768 included): the cache, the `spoken/` file and the ASR get these very bytes.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

import numpy as np

from audioeval.audio.wav import read_pcm16_wav
from audioeval.types import AudioClip

PCM16_RATE = 24000  # what OpenAI's pcm16 is


@dataclass(frozen=True)
class AudioOutput:
    voice: str = "alloy"
    audio_format: str = "wav"  # wav or pcm16, as the backend declares it

    def request_fields(self) -> dict[str, Any]:
        return {"modalities": ["text", "audio"], "audio": {"voice": self.voice, "format": self.audio_format}}


@dataclass(frozen=True)
class AudioAnswer:
    text: str  # the transcript, or "" when the reply gives none
    clip: AudioClip
    transcript: str | None


def decode_wav_exactly(data: bytes) -> AudioClip:
    """A 16-bit PCM WAV checked completely (read_pcm16_wav), its samples kept as sent; ValueError otherwise."""
    pcm, rate = read_pcm16_wav(data)
    return AudioClip.from_pcm16(pcm, rate)


def decode_audio(data: str, asked: str) -> AudioClip:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError, TypeError) as err:
        raise ValueError(f"undecodable audio: not base64 ({err})") from err
    if not raw:
        raise ValueError("empty audio")
    if raw[:4] == b"RIFF":  # vLLM-Omni answers WAV whatever was asked
        return decode_wav_exactly(raw)
    if asked == "wav":
        raise ValueError(f"audio in an unknown format (asked for wav, the data starts {raw[:8]!r})")
    if len(raw) % 2:
        raise ValueError(f"truncated pcm16 audio: {len(raw)} bytes, not a whole number of 16-bit samples")
    return AudioClip.from_pcm16(np.frombuffer(raw, dtype="<i2"), PCM16_RATE)


def _message(choice: Any) -> dict[str, Any]:
    message = choice.get("message") if isinstance(choice, dict) else None
    return message if isinstance(message, dict) else {}


def parse_audio_reply(reply: Any, asked: str) -> AudioAnswer:
    """The spoken answer of a chat completion asked for audio (either shape); ValueError when there is none."""
    try:
        choices = list(reply["choices"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"not a chat completion: {str(reply)[:120]}") from err
    if not choices:
        raise ValueError("a chat completion without choices")
    messages = [_message(c) for c in choices]
    audio = next(
        (m["audio"] for m in messages if isinstance(m.get("audio"), dict) and m["audio"].get("data")), None
    )
    if audio is None:
        raise ValueError("audio was asked for (audio_output=true) but the reply holds none")
    clip = decode_audio(audio["data"], asked)
    transcript = audio.get("transcript") or None
    if transcript is None:  # vLLM-Omni: the text choice is what the talker spoke
        content = messages[0].get("content")
        transcript = content if isinstance(content, str) and content else None
    if transcript is not None and not isinstance(transcript, str):
        raise ValueError(f"audio transcript is not text: {str(transcript)[:120]}")
    return AudioAnswer(transcript or "", clip, transcript)
