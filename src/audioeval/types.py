"""The core data types that flow through the harness (docs/architecture.md: the flow at its top, "Layers").

builder episode ──▶ Conversation (Messages of TextPart / AudioPart) ──▶ Request ──▶ model ──▶ Response
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, get_args

import numpy as np

from audioeval.audio.wav import pcm16_wav, samples_of, to_pcm16


def _fastest_b64encode() -> Callable[[bytes], bytes]:
    """SIMD base64 (the `api` extra): 0.006 ms for a 10 s clip where the standard library's takes 1.9 ms;
    without it the standard library's, the same bytes, slower."""
    try:
        import pybase64
    except ImportError:
        import base64

        return base64.b64encode
    return pybase64.b64encode


b64encode = _fastest_b64encode()

Role = Literal["system", "user", "assistant"]


@dataclass(eq=False)
class AudioClip:
    """A mono clip on the 16-bit grid. Its identity is the SHA-256 of its PCM16 bytes and sampling rate."""

    samples: np.ndarray
    sampling_rate: int

    @classmethod
    def from_array(cls, array: Any, sampling_rate: int) -> AudioClip:
        """The samples put on the 16-bit grid (`quantize`), hashed from the PCM16 bytes made on the way:
        the identity comes with the clip, on the thread that made it, without a second conversion."""
        return PcmClip(to_pcm16(np.asarray(array, dtype=np.float32)), sampling_rate)

    @classmethod
    def from_pcm16(cls, pcm: np.ndarray, sampling_rate: int) -> AudioClip:
        """A clip of PCM16 samples a model sent, kept exactly: its hash, WAV bytes and `pcm16` are these samples
        (-32768 included, which the float samples, on the +-32767 grid, cannot give back)."""
        return PcmClip(np.ascontiguousarray(pcm, dtype="<i2"), sampling_rate)

    @property
    def pcm16(self) -> np.ndarray:
        """The samples as PCM16: those the clip was made of (from_array, from_pcm16), else the samples put on
        the 16-bit grid."""
        pcm = self.__dict__.get("_pcm16")
        return pcm if pcm is not None else to_pcm16(self.samples)

    def known_pcm16(self) -> np.ndarray | None:
        """The PCM16 samples when the clip is made of them (its float samples are exactly those), else None."""
        return self.__dict__.get("_pcm16")

    def __reduce_ex__(self, protocol: Any) -> Any:
        # to another process (synthesis workers hand episodes back) as its PCM16 samples and identity: half the
        # bytes of the float samples, and neither the hash nor the PCM16 conversion is made again there
        pcm = self.known_pcm16()
        if pcm is None:
            return super().__reduce_ex__(protocol)
        return (PcmClip, (pcm, self.sampling_rate, self.sha256))

    def wav_bytes(self) -> bytes:
        """The clip as a 16-bit WAV file."""
        return pcm16_wav(self.pcm16, self.sampling_rate)

    @cached_property
    def sha256(self) -> str:
        return _pcm_sha256(self.pcm16, self.sampling_rate)

    @property
    def wav_base64(self) -> bytes:
        """The clip as a base64 WAV file (ASCII bytes), as API requests carry audio. Encoded once per content:
        clips alive with the same content share one encoding (an episode's demos recur at every k, a corpus
        clip recurs across episodes), and it lives as long as they do."""
        return self._encoding.data

    @cached_property
    def _encoding(self) -> _Encoding:
        key = self.sha256
        with _ENCODINGS_LOCK:
            shared = _ENCODINGS.get(key)
        if shared is not None:
            return shared
        encoding = _Encoding(b64encode(self.wav_bytes()))
        with _ENCODINGS_LOCK:
            return _ENCODINGS.setdefault(key, encoding)

    @property
    def frames(self) -> int:
        return len(self.samples)

    @property
    def seconds(self) -> float:
        return self.frames / float(self.sampling_rate)

    def describe(self) -> dict[str, Any]:
        """What logs and sample files show instead of the samples themselves."""
        return {"sha256": self.sha256, "seconds": round(self.seconds, 4), "sampling_rate": self.sampling_rate}


class PcmClip(AudioClip):
    """A clip made of PCM16 samples (`AudioClip.from_array`, `from_pcm16`, a clip from another process): its
    identity, length, WAV bytes, encoding for the episode store and form in another process come from them,
    and its float samples are made when first read, so a clip that is only hashed, stored and sent (most of a
    run's clips, and every clip of a study's episodes) never makes them."""

    def __init__(self, pcm: np.ndarray, sampling_rate: int, sha256: str | None = None) -> None:
        self.sampling_rate = int(sampling_rate)
        self.__dict__["_pcm16"] = pcm
        self.__dict__["sha256"] = sha256 or _pcm_sha256(pcm, self.sampling_rate)

    @property
    def samples(self) -> np.ndarray:
        samples = self.__dict__.get("_samples")
        if samples is None:  # two threads may both make them: the same numbers
            samples = self.__dict__["_samples"] = samples_of(self.__dict__["_pcm16"])
        return samples

    @samples.setter
    def samples(self, value: np.ndarray) -> None:
        raise AttributeError(
            "a clip made of PCM16 samples keeps them: make a new clip (AudioClip.from_array)"
        )

    @property
    def frames(self) -> int:
        return len(self.__dict__["_pcm16"])


class UnrenderedClip(AudioClip):
    """A clip of an episode outline (`EpisodeBuilder.episode_outline`): the episode's structure and labels
    without synthesis. Its `sha256` is an identity standing for the clip the full episode holds (two clips
    of one outline share it exactly when the full episode's clips are byte-identical); its samples were
    never made, and reading them is an error (a template sees its length as nan seconds)."""

    def __init__(self, identity: str, sampling_rate: int) -> None:
        self.sampling_rate = int(sampling_rate)
        self.__dict__["sha256"] = identity

    def __repr__(self) -> str:  # the dataclass's would read the samples
        return f"UnrenderedClip({self.sha256!r}, {self.sampling_rate})"

    @property
    def samples(self) -> np.ndarray:
        raise ValueError(
            f"clip {self.sha256!r} belongs to an episode outline, which has no audio: read the episode itself "
            "(EpisodeBuilder.episode) for its samples."
        )

    @samples.setter
    def samples(self, value: np.ndarray) -> None:
        raise AttributeError("an episode outline's clip has no samples")


def _pcm_sha256(pcm: np.ndarray, sampling_rate: int) -> str:
    h = hashlib.sha256(str(sampling_rate).encode() + b":")
    h.update(pcm.data)  # the buffer itself: no copy
    return h.hexdigest()


class _Encoding:
    """An encoded clip, shared by the clips of that content while any of them is alive."""

    __slots__ = ("data", "__weakref__")

    def __init__(self, data: bytes) -> None:
        self.data = data


_ENCODINGS: weakref.WeakValueDictionary[str, _Encoding] = weakref.WeakValueDictionary()  # sha256 -> encoding
_ENCODINGS_LOCK = threading.Lock()  # clips are encoded on the event loop and on backends' worker threads


@dataclass(frozen=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, eq=False)
class AudioPart:
    clip: AudioClip
    type: Literal["audio"] = "audio"


Part = TextPart | AudioPart


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def clips(self) -> list[AudioClip]:
        return [p.clip for p in self.parts if isinstance(p, AudioPart)]


def describe_messages(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """JSON-ready messages with each audio clip replaced by {sha256, seconds, sampling_rate}."""
    out = []
    for m in messages:
        content = []
        for p in m.parts:
            if isinstance(p, TextPart):
                content.append({"type": "text", "text": p.text})
            else:
                content.append({"type": "audio", **p.clip.describe()})
        out.append({"role": m.role, "content": content})
    return out


@dataclass(frozen=True, eq=False)
class ShownClip:
    role: str
    label: str | None  # the label the prompt shows next to the clip (None: none shown)
    audio: AudioClip

    @cached_property
    def samples(self) -> np.ndarray:
        """The samples as float64, for signal analysis."""
        return np.asarray(self.audio.samples, dtype=np.float64)

    @property
    def sampling_rate(self) -> int:
        return self.audio.sampling_rate

    @property
    def sha256(self) -> str:
        return self.audio.sha256


@dataclass(frozen=True, eq=False)
class ShownShot:
    clips: tuple[ShownClip, ...]
    label: str | None  # a demo's answer, which the prompt shows; None for the query


@dataclass(frozen=True, eq=False)
class ShownEpisode:
    """What one request's prompt shows of its episode, typed: the context clips (the Morse bank), the first k
    demonstrations with their answers, and the query's clips. The query's answer is not here, nor the episode
    metadata or the facts generators attach to each shot (counts, onsets, operands...): a backend cannot read
    the answer from them. A query clip keeps a label only when the prompt can show it (AudioRemap's anchor
    letters); a label equal to the query's answer is dropped."""

    builder_config: str | None  # the task's builder config, e.g. "audio_count"
    k: int
    context: tuple[ShownClip, ...]
    demos: tuple[ShownShot, ...]
    query: ShownShot

    @classmethod
    def of(cls, episode: dict[str, Any], k: int, builder_config: str | None) -> ShownEpisode:
        query = episode.get("query") or {}
        answer = query.get("label")
        answer = None if answer in (None, "") else str(answer)

        def clip(raw: dict[str, Any], hide: str | None = None) -> ShownClip:
            label = raw.get("label")
            label = None if label in (None, "") or str(label) == hide else str(label)
            return ShownClip(str(raw.get("role") or ""), label, raw["audio"])

        demos = tuple(
            ShownShot(
                tuple(clip(c) for c in d.get("clips") or []),
                None if d.get("label") in (None, "") else str(d["label"]),
            )
            for d in (episode.get("demos") or [])[:k]
        )
        return cls(
            builder_config=builder_config,
            k=k,
            context=tuple(clip(c) for c in episode.get("context") or []),
            demos=demos,
            query=ShownShot(tuple(clip(c, hide=answer) for c in query.get("clips") or []), None),
        )


@dataclass(frozen=True)
class RequestId:
    """Where a request comes from; not part of its content identity."""

    task: str
    shots: int
    episode: int


@dataclass(eq=False)
class Request:
    messages: tuple[Message, ...]
    gen_kwargs: dict[str, Any]
    rid: RequestId
    choices: tuple[str, ...] | None = None  # the task's label space, when it declares one
    shown: ShownEpisode | None = None  # what the prompt shows of the episode (for baselines), not hashed
    # the harness's own record of the sample (its episode, with labels and metadata), not hashed; the server
    # removes it before a backend sees the request (for_backend)
    info: dict[str, Any] = field(default_factory=dict)

    def for_backend(self) -> Request:
        """The request as a backend receives it: the prompt, the generation settings, the label space and the
        label-free view of the episode, nothing the harness keeps for scoring."""
        return Request(self.messages, self.gen_kwargs, self.rid, self.choices, self.shown)

    @property
    def clips(self) -> list[AudioClip]:
        return [c for m in self.messages for c in m.clips]

    @property
    def audio_seconds(self) -> float:
        return sum(c.seconds for c in self.clips)

    def describe(self) -> list[dict[str, Any]]:
        """The messages as logs and keys show them (each clip as its hash, duration and rate)."""
        return describe_messages(self.messages)

    def content_key(self, model_identity: dict[str, Any]) -> str:
        """SHA-256 over everything that determines the response: model, messages, audio, kwargs, choices: the
        JSON of {"choices", "gen_kwargs", "messages", "model"} with sorted keys and no spaces, written here
        part by part so that the messages' part (most of it) is written once per request, not once per key."""
        choices = list(self.choices) if self.choices is not None else None
        blob = (
            f'{{"choices":{_key_json(choices)},"gen_kwargs":{_key_json(self.gen_kwargs)},'
            f'"messages":{self._messages_json},"model":{_key_json(model_identity)}}}'
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    @cached_property
    def _messages_json(self) -> str:
        return _key_json(self.describe())


def _key_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class SpokenAnswer:
    """What a model said aloud: its audio, its own transcript when it gives one, and how long it took.

    `Response.text` stays the text that is scored; which text that is (the ASR of `audio` or `transcript`) is
    decided after generation, never by the backend."""

    audio: AudioClip
    transcript: str | None = None  # the model's own text of what it said (None when it gives none)
    time_to_first_audio_s: float | None = None  # None where the protocol does not stream
    generation_s: float = 0.0  # request sent to last audio byte received

    @property
    def real_time_factor(self) -> float | None:
        """Generation time over answer duration (< 1: faster than it speaks)."""
        return self.generation_s / self.audio.seconds if self.audio.seconds > 0 else None


FailureKind = Literal[
    "http",  # the endpoint answered an HTTP error status not named below (404, 408, 409, ...)
    "rate_limited",  # HTTP 429, or a rate-limit error event
    "server",  # HTTP 5xx, a server_error event, a response the server failed or cancelled
    "timeout",  # no (complete) reply within the time allowed
    "connection",  # no connection, or it dropped mid-reply
    "malformed",  # a reply that is not what was asked for: not JSON, not the event shapes, bad or empty audio
    "refused",  # the server refused this request as invalid (HTTP 400/413/422, an invalid_request error)
    "protocol",  # the server speaks another version of the protocol (the beta Realtime events)
    "limit",  # a reply (or an answer to speak) over the size the harness accepts
    "backend",  # the backend's own failure, given as a message (out of memory, a local model's error)
    "asr",  # the ASR of a spoken answer failed, so there is no text to score
]
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)


@dataclass(frozen=True)
class Failure:
    """Why a backend gave up on a request, typed: code decides on `kind` and `status`, never on the text.
    `detail` is the one-line message logs, samples and warnings show (`str(failure)`)."""

    kind: FailureKind
    detail: str
    status: int | None = None  # the HTTP status, when there was one

    def __post_init__(self) -> None:
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"Failure kind {self.kind!r}: use one of {', '.join(FAILURE_KINDS)}")

    def __str__(self) -> str:
        return self.detail


@dataclass
class Response:
    """A backend's answer to one request. A request the backend gave up on has `failure` set (such responses
    are not cached); `error` is its message, and a backend may pass that message alone (`error="..."`: a
    failure of kind "backend")."""

    text: str | None
    error: str | None = None  # str(failure); kept in step with `failure`
    latency_s: float = 0.0
    cached: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # e.g. {"truncated_audio": [...]}
    spoken: SpokenAnswer | None = None  # set by backends that answer in speech
    failure: Failure | None = None

    def __post_init__(self) -> None:
        if self.failure is None and self.error is not None:
            self.failure = Failure("backend", str(self.error))
        elif self.failure is not None and self.error is None:
            self.error = str(self.failure)
        # Lone surrogates (e.g. a JSON "\ud800" escape from an API) cannot be written as UTF-8 to the cache
        # or the sample log; they become U+FFFD so the response is kept and scored.
        if self.text is not None:
            try:
                self.text.encode("utf-8")
            except UnicodeEncodeError:
                self.text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in self.text)

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None
