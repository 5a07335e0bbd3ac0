"""`--model realtime`: a Realtime API model (`gpt-realtime`, any server speaking the GA WebSocket protocol)
answering in speech (`output=audio`, the default: the audio and the model's transcript of it) or in text.

One isolated response per request: each request is one `response.create` with `conversation: "none"` and its
own `input` items (an out-of-band response). Nothing is added to the session's conversation, so a session
answers the next request with no trace of the last one and nothing to delete, and a response depends only on
its request: the same results for any number in flight or processes. (A fresh conversation per request would
cost a new session, with its handshake and `session.update`, or item deletions on the shared one.) The
request is one event: its items go inline, user audio as `input_audio` (PCM16 resampled to the 24 kHz the
session declares, base64), few-shot answers as assistant `output_text` items (never audio: assistant audio
cannot be sent back), system text as the response's `instructions`.

The pool of sessions and their renewals are in models/api/realtime_client.py; the retries, the adaptive
concurrency and endpoint-down detection, shared with `--model openai`, in models/api/policy.py; reading one
response's events (each checked against its typed shape, realtime_events.py) in models/api/realtime_session.py.
`max_output_tokens` is checked against the API's range (1-4096, or inf) before the run.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Annotated, Any, Literal

import numpy as np

from audioeval.audio.dsp import resample
from audioeval.audio.wav import to_pcm16
from audioeval.config.fields import Arg
from audioeval.errors import ModelError, UsageError
from audioeval.models.api.body import Encoded, JsonBody
from audioeval.models.api.policy import EndpointSettings, check_url
from audioeval.models.api.realtime_client import RealtimeClient
from audioeval.models.api.realtime_session import RATE, Answer
from audioeval.models.base import StreamingModel
from audioeval.types import (
    AudioClip,
    AudioPart,
    Message,
    Request,
    Response,
    SpokenAnswer,
    TextPart,
    b64encode,
)

PCM = {"type": "audio/pcm", "rate": RATE}
_TOKEN_LIMIT_KEYS = ("max_new_tokens", "max_gen_toks", "max_tokens")
MAX_OUTPUT_TOKENS = 4096  # the API's max_output_tokens: 1 to 4096, or "inf"
_ENCODED_CLIPS = 64  # recent clips kept encoded (an episode's demos recur at every k)


def session_update(output: str, voice: str) -> dict[str, Any]:
    """The `session` of the `session.update` sent once per session: the GA shape (`type: realtime`), 24 kHz
    PCM both ways, no turn detection (the client asks for each response)."""
    return {
        "type": "realtime",
        "output_modalities": [output],
        "audio": {
            "input": {"format": PCM, "turn_detection": None},
            "output": {"format": PCM, "voice": voice},
        },
    }


def pcm24k_base64(clip: AudioClip) -> bytes:
    """The clip as base64 PCM16 at 24 kHz, what `input_audio` carries in a session declaring audio/pcm."""
    samples = resample(clip.samples, clip.sampling_rate, RATE)
    return b64encode(to_pcm16(samples).tobytes())


def input_items(
    messages: tuple[Message, ...], audio: Any = pcm24k_base64
) -> tuple[list[dict[str, Any]], str | None]:
    """The conversation items of a request and its instructions (the system text, or None)."""
    items: list[dict[str, Any]] = []
    instructions: list[str] = []
    for m in messages:
        if m.role in ("system", "assistant") and any(isinstance(p, AudioPart) for p in m.parts):
            raise ModelError(
                f"the Realtime API cannot take audio in a {m.role} message (an assistant's audio cannot be sent "
                "back; few-shot answers go as text): move it to a user turn."
            )
        if m.role == "system":
            instructions.append(m.text)
        elif m.role == "assistant":
            items.append(
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": m.text}]}
            )
        else:
            content: list[dict[str, Any]] = []
            for p in m.parts:
                if isinstance(p, TextPart):
                    if p.text:
                        content.append({"type": "input_text", "text": p.text})
                else:
                    content.append({"type": "input_audio", "audio": Encoded(audio(p.clip))})
            items.append({"type": "message", "role": "user", "content": content})
    return items, ("\n\n".join(instructions) if instructions else None)


def token_limit(request: Request, override: int | str | None) -> int | str | None:
    """max_output_tokens for a response: the model argument, else the request's max_new_tokens."""
    if override is not None:
        return override
    for key in _TOKEN_LIMIT_KEYS:
        if request.gen_kwargs.get(key) is not None:
            return int(request.gen_kwargs[key])
    return None


def response_create_event(
    request: Request, output: str, voice: str, max_output_tokens: int | str | None, audio: Any = pcm24k_base64
) -> str:
    """The `response.create` event of a request, built once (the same text goes out on every retry), each
    clip's encoding spliced in without a copy."""
    items, instructions = input_items(request.messages, audio)
    response: dict[str, Any] = {"conversation": "none", "input": items, "output_modalities": [output]}
    if instructions is not None:
        response["instructions"] = instructions
    if output == "audio":
        response["audio"] = {"output": {"format": PCM, "voice": voice}}
    limit = token_limit(request, max_output_tokens)
    if limit is not None:
        response["max_output_tokens"] = limit
    return JsonBody.of({"type": "response.create", "response": response}).to_bytes().decode("ascii")


def spoken_answer(answer: Answer) -> SpokenAnswer:
    clip = AudioClip.from_pcm16(np.frombuffer(answer.audio, dtype="<i2"), RATE)  # as sent, bit for bit
    return SpokenAnswer(
        audio=clip,
        transcript=answer.transcript,
        time_to_first_audio_s=answer.first_audio_s,
        generation_s=answer.generation_s,
    )


# The --model_args of RealtimeModel, each declared once (config/fields.py): its type, bounds and meaning
# here, its default in the signature.
_Model = Annotated[str, Arg("the model name, sent as `?model=` on the WebSocket URL", min_length=1)]
_BaseUrl = Annotated[
    str | None,
    Arg(
        "the API's base, e.g. `http://127.0.0.1:8765/v1`; the socket is `ws(s)://…/realtime?model=NAME`, as "
        "the SDK forms it",
        shown_default="OpenAI's (`OPENAI_BASE_URL` if set)",
    ),
]
_WebsocketUrl = Annotated[
    str | None,
    Arg("a separate base for the socket (the SDK's `websocket_base_url`), e.g. `wss://proxy.example/v1`"),
]
_ApiKeyEnv = Annotated[str, Arg("the environment variable holding the key (a loopback address needs none)")]
_Voice = Annotated[
    str,
    Arg(
        "the voice of spoken answers (`alloy`, `ash`, `ballad`, `coral`, `echo`, `sage`, `shimmer`, "
        "`verse`, `marin`, `cedar`)",
        min_length=1,
    ),
]
_Output = Annotated[Literal["audio", "text"], Arg("`audio`: speech with its transcript; `text`: text only")]
_NumConcurrent = Annotated[
    int, Arg("responses in flight at once to start with (per process), one session each", ge=1)
]
_MaxConcurrent = Annotated[
    int | None,
    Arg(
        "the most responses in flight the adaptive limit may reach",
        ge=1,
        shown_default="`num_concurrent`",
    ),
]
_MaxOutputTokens = Annotated[
    Annotated[int, Arg(ge=1, le=MAX_OUTPUT_TOKENS)] | Literal["inf"] | None,
    Arg(
        "each response's `max_output_tokens`: a whole number (the API's range), or `inf`",
        shown_default="the task's `max_new_tokens`",
    ),
]
_MaxRetries = Annotated[
    int,
    Arg(
        "retries of the faults below that make sense to retry, with jittered exponential backoff",
        ge=0,
    ),
]
_Timeout = Annotated[
    float, Arg("seconds per response attempt, opening a session included: nothing waits longer", gt=0)
]
_MaxRetryAfter = Annotated[
    float, Arg("the longest wait for an exhausted rate limit to reset, in seconds", ge=0)
]
_MaxConsecutiveFailures = Annotated[
    int,
    Arg("responses failing in a row (each after its retries) before the endpoint counts as down", ge=1),
]
_SessionLifetime = Annotated[
    float,
    Arg(
        "seconds after which a session is replaced before its next response (the API ends sessions at "
        "60 min)",
        ge=1,
    ),
]


class RealtimeModel(StreamingModel):
    name = "realtime"
    imports_ahead = ("openai",)  # its endpoint's URL and headers are resolved as the SDK does
    speaks = True
    # The GA Realtime API takes no sampling settings: temperature and do_sample are accepted (tasks set them)
    # and not sent; the token limit becomes each response's max_output_tokens.
    gen_kwargs_spec = {
        "max_new_tokens": Annotated[int, Arg(ge=1)],
        "max_gen_toks": Annotated[int, Arg(ge=1)],
        "max_tokens": Annotated[int, Arg(ge=1)],
        "do_sample": bool,
        "temperature": Annotated[float | None, Arg(ge=0)],
    }

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        """The declared settings, and a token limit the API takes (checked before the run, not refused by the
        server on every request); `--model_args max_output_tokens` replaces the tasks' limit."""
        super().check_gen_kwargs(gen_kwargs, source, model_args)
        if model_args.get("max_output_tokens") is not None:
            return
        for key in _TOKEN_LIMIT_KEYS:
            value = gen_kwargs.get(key)
            if (
                isinstance(value, int | float | str)
                and str(value).strip().isdigit()
                and int(value) > MAX_OUTPUT_TOKENS
            ):
                raise UsageError(
                    f"{source}: {key}={value}: the Realtime API takes max_output_tokens from 1 to "
                    f"{MAX_OUTPUT_TOKENS}, or inf. Lower it (--gen_kwargs {key}={MAX_OUTPUT_TOKENS}), or set "
                    "--model_args max_output_tokens=inf."
                )

    def __init__(
        self,
        *,
        model: _Model,
        base_url: _BaseUrl = None,
        websocket_url: _WebsocketUrl = None,
        api_key_env: _ApiKeyEnv = "OPENAI_API_KEY",
        voice: _Voice = "alloy",
        output: _Output = "audio",
        num_concurrent: _NumConcurrent = 8,
        max_concurrent: _MaxConcurrent = None,
        max_output_tokens: _MaxOutputTokens = None,
        max_retries: _MaxRetries = 6,
        timeout: _Timeout = 120.0,
        max_retry_after: _MaxRetryAfter = 60.0,
        max_consecutive_failures: _MaxConsecutiveFailures = 10,
        session_lifetime: _SessionLifetime = 55 * 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.output, self.voice = str(output), str(voice)
        self.max_output_tokens = max_output_tokens
        if websocket_url is not None:
            check_url("websocket_url", websocket_url, ("wss", "ws", "https", "http"))
        self.websocket_url = websocket_url
        self.settings = EndpointSettings(
            model=model,
            base_url=base_url,
            api_key_env=api_key_env,
            num_concurrent=int(num_concurrent),
            max_concurrent=int(max_concurrent) if max_concurrent is not None else None,
            max_retries=int(max_retries),
            timeout=float(timeout),
            max_retry_after=float(max_retry_after),
            max_consecutive_failures=int(max_consecutive_failures),
        )
        self.client = RealtimeClient(
            self.settings,
            session_update(self.output, self.voice),
            self.stats,
            session_lifetime=float(session_lifetime),
            websocket_url=websocket_url,
        )
        self._encoded: OrderedDict[str, bytes] = OrderedDict()

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "endpoint_model": self.settings.model,
            "base_url": self.websocket_url or self.settings.base_url,
            "output": self.output,
            "voice": self.voice,
            "max_output_tokens": self.max_output_tokens,
        }

    @property
    def display_name(self) -> str:
        return f"realtime__{self.settings.model}"

    @property
    def request_chunk_size(self) -> int:
        return max(self.batch_size, self.settings.num_concurrent * 2)  # when a cascade calls generate()

    @property
    def max_in_flight(self) -> int:
        return int(self.settings.max_concurrent or self.settings.num_concurrent)

    def _clip_audio(self, clip: AudioClip) -> bytes:
        """pcm24k_base64, kept for the most recent clips."""
        key = clip.sha256
        data = self._encoded.get(key)
        if data is None:
            data = self._encoded[key] = pcm24k_base64(clip)
            if len(self._encoded) > _ENCODED_CLIPS:
                self._encoded.popitem(last=False)
        else:
            self._encoded.move_to_end(key)
        return data

    async def generate_one(self, request: Request) -> Response:
        event = response_create_event(
            request, self.output, self.voice, self.max_output_tokens, self._clip_audio
        )
        outcome = await self.client.respond(event, self.output == "audio")
        info: dict[str, Any] = {"attempts": outcome.attempts} if outcome.attempts > 1 else {}
        if outcome.free_retries:
            info["sessions_renewed"] = outcome.free_retries
        answer = outcome.value
        if answer is None:
            return Response(text=None, failure=outcome.failure, latency_s=outcome.latency_s, info=info)
        if answer.status != "completed":
            info["status"], info["reason"] = answer.status, answer.reason
        if answer.unknown_events or answer.beta_events:
            info["ignored_events"] = sorted(set(answer.unknown_events + answer.beta_events))
        spoken = spoken_answer(answer) if self.output == "audio" else None
        return Response(text=answer.text, latency_s=outcome.latency_s, info=info, spoken=spoken)

    async def aclose(self) -> None:
        await self.client.aclose()
