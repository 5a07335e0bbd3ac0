"""`--model openai`: any OpenAI-compatible Chat Completions server (OpenAI's audio models, Gemini's
OpenAI-compatible endpoint, `vllm serve`). Audio goes as `input_audio` parts holding base64 WAV.

Requests stream: each is sent as soon as it is rendered, with an adaptive number in flight (api_client.py)."""

from __future__ import annotations

import base64
import re
import threading
from collections import OrderedDict
from typing import Any

from audioeval.audio.wav import encode_wav
from audioeval.errors import ModelError
from audioeval.models.api.client import ChatClient, EndpointSettings
from audioeval.models.base import StreamingModel
from audioeval.models.generation import LOCAL_GEN_KWARGS
from audioeval.types import AudioClip, AudioPart, Message, Request, Response, TextPart

# harness generation kwargs -> Chat Completions fields
_KWARG_MAP = {
    "max_new_tokens": "max_tokens",
    "max_gen_toks": "max_tokens",
    "max_tokens": "max_tokens",
    "until": "stop",
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "stop": "stop",
    "max_completion_tokens": "max_completion_tokens",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}


# --gen_kwargs extra_body.NAME=VALUE sends NAME as is (a server's own field, e.g. vLLM's min_tokens)
EXTRA_BODY = "extra_body."

# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, gpt-5-mini, ...; optionally behind a `provider/` prefix)
# refuse `max_tokens` and accept no temperature but their default
_REASONING_NAME = re.compile(r"^(?:[^/]+/)?(?:o[1-9]|gpt-5)(?:$|[-.])", re.IGNORECASE)
FAMILIES = ("auto", "chat", "reasoning")


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING_NAME.match(model.strip()))


_ENCODED: OrderedDict[str, str] = OrderedDict()  # clip sha256 -> base64 WAV, for the clips seen last
_ENCODED_MAX = 64
_ENCODED_LOCK = threading.Lock()  # cascades call generate() from the serving path's worker thread


def wav_base64(clip: AudioClip) -> str:
    """A clip as base64 WAV. The k-shot requests of an episode repeat its demo clips (nested demos), so the
    last few encodings are kept instead of redone."""
    key = clip.sha256
    with _ENCODED_LOCK:
        data = _ENCODED.get(key)
        if data is not None:
            _ENCODED.move_to_end(key)
            return data
    data = base64.b64encode(encode_wav(clip.samples, clip.sampling_rate)).decode("ascii")
    with _ENCODED_LOCK:
        _ENCODED[key] = data
        if len(_ENCODED) > _ENCODED_MAX:
            _ENCODED.popitem(last=False)
    return data


def to_openai_messages(
    messages: tuple[Message, ...] | list[Message], audio_format: str = "wav"
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role in ("system", "assistant"):
            if any(isinstance(p, AudioPart) for p in m.parts):
                raise ModelError(
                    f"the OpenAI chat format cannot carry audio in a {m.role} message; move it to a user turn."
                )
            out.append({"role": m.role, "content": m.text})
            continue
        content: list[dict[str, Any]] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                content.append({"type": "text", "text": p.text})
            else:
                data = wav_base64(p.clip)
                content.append({"type": "input_audio", "input_audio": {"data": data, "format": audio_format}})
        out.append({"role": "user", "content": content or ""})
    return out


def completion_payload(
    request: Request,
    defaults: dict[str, Any],
    token_limit_field: str = "max_tokens",
    reasoning: bool = False,
) -> dict[str, Any]:
    """Chat Completions fields for a request. `token_limit_field` names the field that carries the token limit:
    `max_tokens`, or `max_completion_tokens` for endpoints (newer OpenAI models) that refuse the former.
    `reasoning`: the model has no greedy decoding, so a greedy request (temperature 0 or unset) sends no
    temperature; an explicit non-zero temperature is still sent."""
    kwargs = {**defaults, **request.gen_kwargs}
    payload: dict[str, Any] = {"messages": to_openai_messages(request.messages)}
    extra: dict[str, Any] = {}
    do_sample = kwargs.pop("do_sample", None)
    if reasoning and kwargs.get("temperature") == 0:
        kwargs["temperature"] = None
    # temperature=None asks for no temperature field at all (some reasoning models accept none but their default)
    omit_temperature = reasoning or ("temperature" in kwargs and kwargs["temperature"] is None)
    for key, value in kwargs.items():
        if value is None:
            continue
        if key.startswith(EXTRA_BODY):
            extra[key[len(EXTRA_BODY) :]] = value
        elif key in _KWARG_MAP:
            field = _KWARG_MAP[key]
            payload[token_limit_field if field == "max_tokens" else field] = value
        else:
            extra[key] = value
    if not omit_temperature and (do_sample is False or "temperature" not in payload):
        payload["temperature"] = 0.0
    if extra:
        payload["extra_body"] = extra
    return payload


class OpenAIChatModel(StreamingModel):
    name = "openai"
    arg_minimums = {
        "num_concurrent": 1,
        "max_concurrent": 1,
        "max_retries": 0,
        "timeout": 0.001,
        "max_retry_after": 0,
        "max_consecutive_failures": 1,
        "max_tokens": 1,
    }
    gen_kwargs_spec = {
        **{k: v for k, v in LOCAL_GEN_KWARGS.items() if k != "num_beams"},  # top_k etc. go in extra_body
        "max_completion_tokens": "int>=1",
        "seed": "int?",
        "presence_penalty": "float?",
        "frequency_penalty": "float?",
        "reasoning_effort": "str?",
        "min_p": "float?>=0",
    }

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        declared = {k: v for k, v in gen_kwargs.items() if not k.startswith(EXTRA_BODY)}
        super().check_gen_kwargs(declared, source, model_args)

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        num_concurrent: int = 8,
        max_concurrent: int | None = None,
        max_retries: int = 6,
        timeout: float = 120.0,
        max_retry_after: float = 60.0,
        max_consecutive_failures: int = 10,
        max_tokens: int | None = None,
        token_limit_field: str | None = None,
        family: str = "auto",
        **kwargs: Any,
    ) -> None:
        if family not in FAMILIES:
            raise ModelError(f"family={family}: use one of {', '.join(FAMILIES)}.")
        if token_limit_field not in (None, "max_tokens", "max_completion_tokens"):
            raise ModelError(
                f"--model_args token_limit_field={token_limit_field}: use max_tokens or max_completion_tokens."
            )
        # auto: o1/o3/o4/gpt-5 style names get the reasoning-model fields; family=chat|reasoning overrides
        self.reasoning = family == "reasoning" or (family == "auto" and is_reasoning_model(str(model)))
        self.token_limit_field = token_limit_field or (
            "max_completion_tokens" if self.reasoning else "max_tokens"
        )
        super().__init__(**kwargs)
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
        self.defaults = {"max_tokens": max_tokens} if max_tokens else {}
        self.client = ChatClient(self.settings, self.stats)

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "endpoint_model": self.settings.model,
            "base_url": self.settings.base_url,
            "defaults": self.defaults,
            "token_limit_field": self.token_limit_field,
            # only when set, so chat-model cache keys stay what they were
            **({"family": "reasoning"} if self.reasoning else {}),
        }

    @property
    def display_name(self) -> str:
        return f"openai__{self.settings.model}"

    @property
    def request_chunk_size(self) -> int:
        return max(self.batch_size, self.settings.num_concurrent * 2)  # when a cascade calls generate()

    @property
    def max_in_flight(self) -> int:
        return int(self.settings.max_concurrent or self.settings.num_concurrent)

    async def generate_one(self, request: Request) -> Response:
        payload = completion_payload(request, self.defaults, self.token_limit_field, self.reasoning)
        c = await self.client.complete(payload)
        info = {"attempts": c.attempts} if c.attempts > 1 else {}
        return Response(text=c.text, error=c.error, latency_s=c.latency_s, info=info)

    async def aclose(self) -> None:
        await self.client.aclose()
