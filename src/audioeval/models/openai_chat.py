"""`--model openai`: any OpenAI-compatible Chat Completions server (OpenAI's audio models, Gemini's
OpenAI-compatible endpoint, `vllm serve`). Audio goes as `input_audio` parts holding base64 WAV.

Requests stream: each is sent as soon as it is rendered, with an adaptive number in flight (models/api/client.py).
Building a request (`request_body`) and reading a reply (`parse_reply`) are separate small functions; the
client in between only moves bytes, retries and counts.
Before the first request of a run the backend waits for a self-hosted endpoint to answer `GET /models` (a
`vllm serve` that is still loading refuses connections); a 404 is checked against that list, so a model name
the server does not serve is an error naming the ones it does; a 400 (a prompt with more audio parts than the
server takes, or longer than its context) is a counted failure carrying the server's message.

With `audio_output=true` (and `voice`, `audio_format=wav|pcm16`) the model answers in speech: the request asks
for text and audio, and the reply's audio (OpenAI's shape or vLLM-Omni's two choices) becomes the response's
spoken answer (models/speech/audio_reply.py), heard by the run's ASR before it is scored."""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import logging
import re
import socket
import time
import urllib.error
import urllib.request
from dataclasses import replace
from typing import Annotated, Any, Literal, NamedTuple
from urllib.parse import unquote, urlsplit, urlunsplit

from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.api.body import Encoded, JsonBody
from audioeval.models.api.client import ChatClient, EndpointDown, EndpointSettings
from audioeval.models.base import StreamingModel
from audioeval.models.generation import LOCAL_GEN_KWARGS
from audioeval.models.speech.audio_reply import AudioAnswer, AudioOutput, parse_audio_reply
from audioeval.types import AudioPart, Failure, Message, Request, Response, SpokenAnswer, TextPart

log = logging.getLogger("audioeval")

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
Family = Literal["auto", "chat", "reasoning"]


def is_reasoning_model(model: str) -> bool:
    return bool(_REASONING_NAME.match(model.strip()))


OPENAI_HOST = "api.openai.com"


def default_token_limit_field(url: str, reasoning: bool) -> str:
    """The field that carries the token limit when `token_limit_field` is not given: `max_completion_tokens` for
    OpenAI's own API (where `max_tokens` is deprecated, and refused by reasoning models) and for reasoning
    models anywhere; `max_tokens` for every other server (vLLM takes both; servers that follow older versions
    of the API, and OpenAI-compatible front ends of other providers, take only `max_tokens`)."""
    if reasoning or urlsplit(url).hostname == OPENAI_HOST:
        return "max_completion_tokens"
    return "max_tokens"


def to_openai_messages(
    messages: tuple[Message, ...] | list[Message], audio_format: str = "wav", encoded: bool = False
) -> list[dict[str, Any]]:
    """Chat Completions messages. Audio data is the clip's base64 WAV as a str, or with `encoded` as the
    clip's own bytes for a JsonBody (no copy)."""
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
                wav = p.clip.wav_base64
                data: Encoded | str = Encoded(wav) if encoded else wav.decode("ascii")
                content.append({"type": "input_audio", "input_audio": {"data": data, "format": audio_format}})
        out.append({"role": "user", "content": content or ""})
    return out


def completion_settings(
    gen_kwargs: dict[str, Any],
    defaults: dict[str, Any],
    token_limit_field: str = "max_tokens",
    reasoning: bool = False,
) -> dict[str, Any]:
    """The Chat Completions fields other than the messages; settings the API does not name go under
    `extra_body` (sent as top-level fields)."""
    kwargs = {**defaults, **gen_kwargs}
    payload: dict[str, Any] = {}
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


def completion_payload(
    request: Request,
    defaults: dict[str, Any],
    token_limit_field: str = "max_tokens",
    reasoning: bool = False,
) -> dict[str, Any]:
    """Chat Completions fields for a request, as the `openai` SDK's `chat.completions.create` takes them.
    `token_limit_field` names the field that carries the token limit: `max_tokens`, or
    `max_completion_tokens` for endpoints (newer OpenAI models) that refuse the former.
    `reasoning`: the model has no greedy decoding, so a greedy request (temperature 0 or unset) sends no
    temperature; an explicit non-zero temperature is still sent."""
    settings = completion_settings(request.gen_kwargs, defaults, token_limit_field, reasoning)
    return {"messages": to_openai_messages(request.messages), **settings}


def request_body(
    model: str,
    request: Request,
    defaults: dict[str, Any],
    token_limit_field: str = "max_tokens",
    reasoning: bool = False,
    audio: AudioOutput | None = None,
) -> JsonBody:
    """The HTTP body of a request, built once (the same bytes go out on every retry): what
    `completion_payload` gives the SDK, with `extra_body` merged in as the SDK merges it, and each clip's
    base64 WAV spliced in without a copy. With `audio`, the fields that ask for a spoken answer."""
    settings = completion_settings(request.gen_kwargs, defaults, token_limit_field, reasoning)
    extra = settings.pop("extra_body", {})
    messages = to_openai_messages(request.messages, encoded=True)
    spoken = audio.request_fields() if audio is not None else {}
    return JsonBody.of({"model": model, "messages": messages, **settings, **spoken, **extra})


def parse_reply(reply: Any) -> str:
    """The text of a chat completion; ValueError when the reply is not one (retried as a malformed reply)."""
    try:
        message = reply["choices"][0]["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise ValueError(f"not a chat completion: {str(reply)[:120]}") from err
    if content is not None and not isinstance(content, str):
        raise ValueError(f"message content is not text: {str(content)[:120]}")
    return content or ""


def models_url_and_headers(base_url: str, api_key: str) -> tuple[str, dict[str, str]]:
    """GET {base_url}/models as the chat requests reach the endpoint (http.py): a query string in the base URL
    (`?api-key=...`) stays after the path, and credentials in it (http://user:password@host/v1) go as Basic
    auth in place of the key (urllib would take `user:password@host` for the host name)."""
    parts = urlsplit(base_url)
    url = urlunsplit(
        parts._replace(netloc=parts.netloc.rpartition("@")[2], path=parts.path.rstrip("/") + "/models")
    )
    if parts.username is None and parts.password is None:
        return url, {"Authorization": f"Bearer {api_key}"}
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
    return url, {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


class ModelList(NamedTuple):
    """What GET {base_url}/models gave."""

    status: int | None  # the HTTP status; None without an answer
    ids: list[str] | None  # the model ids, when the answer was a model list
    reason: str  # what went wrong, "" when nothing did
    # nothing took the connection (refused, no route, unknown host): no server there
    unreachable: bool = False


_UNREACHABLE = (ConnectionRefusedError, socket.gaierror)
_MODEL_LIST_BYTES = 8 * 2**20
_UNREACHABLE_ERRNOS = (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)


def list_models(base_url: str, api_key: str, timeout: float = 10.0) -> ModelList:
    """GET {base_url}/models."""
    try:
        url, headers = models_url_and_headers(base_url, api_key)
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            body = json.loads(
                reply.read(_MODEL_LIST_BYTES)
            )  # a list cut short is not JSON: "not a model list"
    except urllib.error.HTTPError as err:
        return ModelList(err.code, None, f"HTTP {err.code}")
    except (OSError, ValueError) as err:  # refused, reset, timed out, not JSON
        reason = getattr(err, "reason", None) or err
        unreachable = (
            isinstance(reason, _UNREACHABLE) or getattr(reason, "errno", None) in _UNREACHABLE_ERRNOS
        )
        return ModelList(None, None, " ".join(str(reason).split())[:200], unreachable)
    try:
        return ModelList(200, [str(m["id"]) for m in body["data"]], "")
    except (KeyError, TypeError):
        return ModelList(200, None, "not a model list")


def _serves(ids: list[str], model: str) -> bool:
    return model in ids or model in {i.removeprefix("models/") for i in ids}  # Gemini lists "models/<name>"


_AUDIO_LIMIT = re.compile(r"at most \d+ audio", re.IGNORECASE)  # vLLM's 400 for too many clips in a prompt


# The --model_args of OpenAIChatModel, each declared once (config/fields.py): its type, bounds and meaning
# here, its default in the signature.
_Model = Annotated[str, Arg("the endpoint's model name", min_length=1)]
_BaseUrl = Annotated[
    str | None, Arg("e.g. `http://127.0.0.1:8000/v1` for `vllm serve`", shown_default="OpenAI's")
]
_ApiKeyEnv = Annotated[
    str,
    Arg(
        "the environment variable holding the key (keys never go in `--model_args`; a loopback "
        "`base_url` needs none)"
    ),
]
_NumConcurrent = Annotated[int, Arg("requests in flight at once to start with (per process)", ge=1)]
_MaxConcurrent = Annotated[
    int | None,
    Arg(
        "the most requests in flight the adaptive limit may reach",
        ge=1,
        shown_default="`num_concurrent`",
    ),
]
_MaxRetries = Annotated[
    int,
    Arg(
        "retries of 408/409/429/5xx, timeouts, dropped connections and malformed replies, with jittered "
        "exponential backoff (1, 2, 4, ... s, at most 60 s, times a factor drawn from [0.5, 1))",
        ge=0,
    ),
]
_Timeout = Annotated[
    float,
    Arg("seconds per attempt: connecting, sending the request and receiving the whole reply", gt=0),
]
_MaxRetryAfter = Annotated[
    float,
    Arg(
        "the longest `Retry-After` (or `retry-after-ms`) honoured, in seconds; a longer one waits this long",
        ge=0,
    ),
]
_MaxConsecutiveFailures = Annotated[
    int,
    Arg("requests failing in a row (each after its retries) before the endpoint counts as down", ge=1),
]
_MaxTokens = Annotated[int | None, Arg("default token limit when the task sets none", ge=1)]
_TokenLimitField = Annotated[
    Literal["max_tokens", "max_completion_tokens"] | None,
    Arg(
        "the field that carries the token limit. By default `max_completion_tokens` for OpenAI's own API "
        "(`api.openai.com`, where `max_tokens` is deprecated) and for the reasoning family anywhere; "
        "`max_tokens` for every other server (vLLM takes both; servers following older versions of the "
        "API, and other providers' OpenAI-compatible front ends, take only `max_tokens`)",
        shown_default="see the meaning",
    ),
]
_Family = Annotated[
    Family,
    Arg(
        "`reasoning`: the model takes no temperature but its default (OpenAI's o1/o3/o4/gpt-5 models) and "
        "its token limit as `max_completion_tokens`; `chat`: `temperature: 0`; `auto` picks `reasoning` for "
        "o1/o3/o4/gpt-5 style names (`gpt-5-mini`, `o4-mini`, `openai/o3`) and `chat` otherwise"
    ),
]
_WaitForServer = Annotated[
    float | None,
    Arg(
        "seconds to wait, before the first request, for a self-hosted `base_url` to answer `GET /models`",
        ge=0,
        shown_default="the retries' wait (63 s)",
    ),
]
_AudioOutput = Annotated[bool, Arg("answer in speech too: see [speech_output.md](speech_output.md)")]
_Voice = Annotated[
    str | None, Arg("with `audio_output=true`: the voice", min_length=1, shown_default="`alloy`")
]
_AudioFormat = Annotated[
    Literal["wav", "pcm16"] | None,
    Arg(
        "with `audio_output=true`: the formats the harness decodes without FFmpeg (`pcm16` is 16-bit mono "
        "24 kHz, the only format OpenAI streams)",
        shown_default="`wav`",
    ),
]


class OpenAIChatModel(StreamingModel):
    name = "openai"
    imports_ahead = ("openai",)  # its endpoint's URL and headers are resolved as the SDK does
    gen_kwargs_spec = {
        **{k: v for k, v in LOCAL_GEN_KWARGS.items() if k != "num_beams"},  # top_k etc. go in extra_body
        "max_completion_tokens": Annotated[int, Arg(ge=1)],
        "seed": int | None,
        "presence_penalty": float | None,
        "frequency_penalty": float | None,
        "reasoning_effort": str | None,
        "min_p": Annotated[float | None, Arg(ge=0)],
    }

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        declared = {k: v for k, v in gen_kwargs.items() if not k.startswith(EXTRA_BODY)}
        super().check_gen_kwargs(declared, source, model_args)

    def __init__(
        self,
        *,
        model: _Model,
        base_url: _BaseUrl = None,
        api_key_env: _ApiKeyEnv = "OPENAI_API_KEY",
        num_concurrent: _NumConcurrent = 8,
        max_concurrent: _MaxConcurrent = None,
        max_retries: _MaxRetries = 6,
        timeout: _Timeout = 120.0,
        max_retry_after: _MaxRetryAfter = 60.0,
        max_consecutive_failures: _MaxConsecutiveFailures = 10,
        max_tokens: _MaxTokens = None,
        token_limit_field: _TokenLimitField = None,
        family: _Family = "auto",
        wait_for_server: _WaitForServer = None,
        audio_output: _AudioOutput = False,
        voice: _Voice = None,
        audio_format: _AudioFormat = None,
        **kwargs: Any,
    ) -> None:
        if not audio_output and (voice is not None or audio_format is not None):
            raise ModelError(
                "--model_args voice and audio_format ask for a spoken answer: add audio_output=true."
            )
        self.audio = AudioOutput(voice or "alloy", audio_format or "wav") if audio_output else None
        self.speaks = self.audio is not None
        # auto: o1/o3/o4/gpt-5 style names get the reasoning-model fields; family=chat|reasoning overrides
        self.reasoning = family == "reasoning" or (family == "auto" and is_reasoning_model(str(model)))
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
        self.token_limit_field = token_limit_field or default_token_limit_field(
            self.client.http.url, self.reasoning
        )
        self.wait_for_server = float(wait_for_server) if wait_for_server is not None else None
        self._ready = False  # the endpoint answered (or there is nothing to wait for)
        self._probe: asyncio.Task[None] | None = None
        self._probe_loop: asyncio.AbstractEventLoop | None = None
        self._model_checked = False

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
            **({"audio_output": self.audio.request_fields()["audio"]} if self.audio is not None else {}),
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
        if not self._ready:
            await self._wait_until_ready()
        body = request_body(
            self.settings.model, request, self.defaults, self.token_limit_field, self.reasoning, self.audio
        )
        c: Any = await self.client.complete(body, self._parse)
        failure: Failure | None = c.failure
        if failure is not None and failure.status == 404 and not self._model_checked:
            await self._check_model_is_served()
        if failure is not None and failure.kind == "refused" and _AUDIO_LIMIT.search(failure.detail):
            # the server refused this request (a counted failure with its message, never toward the endpoint
            # being down: the client sees to that); say what to raise
            hint = f" [{len(request.clips)} sent; vLLM: raise the server's --limit-mm-per-prompt]"
            failure = replace(failure, detail=failure.detail + hint)
        info = {"attempts": c.attempts} if c.attempts > 1 else {}
        if isinstance(c.value, AudioAnswer):
            spoken = SpokenAnswer(c.value.clip, c.value.transcript, generation_s=c.latency_s)
            return Response(text=c.value.text, latency_s=c.latency_s, info=info, spoken=spoken)
        return Response(text=c.value, failure=failure, latency_s=c.latency_s, info=info)

    def prepare_request(self, request: Request) -> None:
        for clip in request.clips:
            clip.wav_base64  # noqa: B018 - encoded once per clip, here rather than on the event loop

    def _parse(self, reply: Any) -> str | AudioAnswer:
        if self.audio is None:
            return parse_reply(reply)
        return parse_audio_reply(reply, self.audio.audio_format)

    # ------------------------------------------------------------------------------------------------------
    def _wait_budget(self) -> float:
        """Seconds to wait for the endpoint to come up: wait_for_server, else what one request's retries wait."""
        if self.wait_for_server is not None:
            return self.wait_for_server
        return self.settings.retry_wait_budget()

    async def _wait_until_ready(self) -> None:
        """One probe per run (the requests in flight share it): see `_probe_endpoint`."""
        loop = asyncio.get_running_loop()
        if self._probe is None or self._probe_loop is not loop:
            self._probe, self._probe_loop = loop.create_task(self._probe_endpoint()), loop
        await asyncio.shield(self._probe)
        self._ready = True

    async def _probe_endpoint(self) -> None:
        """Wait, saying so once, until a self-hosted endpoint answers GET /models (vLLM refuses connections while
        it loads). Any HTTP answer but 502-504 counts as up. When nothing took a connection for the whole wait
        budget there is no server there: EndpointDown, before any request is sent (the requests' own retries
        would only wait as long again). Otherwise, after the budget the requests go anyway, and the client's
        retries and its endpoint-down error (naming the URL and the last status) take over."""
        base = self.settings.base_url
        if not base:
            return  # OpenAI's own API
        budget = self._wait_budget()
        started = time.monotonic()
        said = False
        never_reached = True  # no probe so far got a connection through
        while True:
            status, _ids, reason, unreachable = await asyncio.to_thread(
                list_models, base, self.settings.api_key(), min(10.0, self.settings.timeout)
            )
            if status is not None and status not in (502, 503, 504):
                if said:
                    log.info("%s answers after %.0f s", base, time.monotonic() - started)
                return
            never_reached = never_reached and unreachable
            waited = time.monotonic() - started
            if waited >= budget:
                if never_reached and budget >= 1:
                    raise EndpointDown(
                        f"{self.settings.label} is not answering: nothing took a connection for {waited:.0f} s "
                        f"({reason}). Start the server or check base_url; a server that takes longer to "
                        "start: --model_args wait_for_server=SECONDS."
                    )
                if said or budget >= 1:
                    log.warning(
                        "%s did not answer GET %s/models within %.0f s (%s); sending the requests anyway. "
                        "Start the server, check base_url, or wait longer with --model_args wait_for_server=SECONDS.",
                        base, base.rstrip("/"), waited, reason,
                    )  # fmt: skip
                return
            if not said:
                log.warning(
                    "waiting up to %.0f s for %s to come up (GET /models: %s); --model_args wait_for_server=SECONDS "
                    "sets the wait",
                    budget, base, reason,
                )  # fmt: skip
                said = True
            await asyncio.sleep(min(2.0, budget - waited))

    async def _check_model_is_served(self) -> None:
        """After a 404: if the endpoint lists its models and ours is not among them, stop with the list."""
        self._model_checked = True
        base = self.settings.base_url
        if not base:
            return
        ids = (
            await asyncio.to_thread(
                list_models, base, self.settings.api_key(), min(10.0, self.settings.timeout)
            )
        ).ids
        if ids is not None and not _serves(ids, self.settings.model):
            shown = ", ".join(ids[:20]) + (f" (and {len(ids) - 20} more)" if len(ids) > 20 else "")
            raise ModelError(
                f"{base} does not serve a model named {self.settings.model!r}; it serves: {shown or 'nothing'} "
                "(GET /models). Pass one of those with --model_args model=NAME."
            )

    async def aclose(self) -> None:
        await self.client.aclose()
