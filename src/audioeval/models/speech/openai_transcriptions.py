"""`--asr openai`: any OpenAI-compatible `POST <base_url>/audio/transcriptions` endpoint (OpenAI's whisper-1 or
gpt-4o-transcribe, `vllm serve openai/whisper-large-v3`).

    --asr openai --asr_args model=whisper-1
    --asr openai --asr_args model=openai/whisper-large-v3,base_url=http://localhost:8001/v1

Each clip goes as a multipart form (`file` = WAV, its samples as the model sent them; `model`,
`response_format=json`, `temperature=0`, and `language` when given), built with aiohttp, which the chat
client already uses. Retries, the Retry-After cap, the adaptive number in flight and endpoint-down detection
are the endpoint policy's (models/api/policy.py), as for Chat Completions: 408/409/429/5xx, timeouts, dropped
connections and malformed replies are retried up to `max_retries` times; what still fails is a counted
failure with its reason; `max_consecutive_failures` answers failing in a row declare the endpoint down, and
the answers after it fail at once naming it. The key comes from the environment variable named by
`api_key_env`, never from a flag.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.api.http import (
    HttpReply,
    HttpStatusError,
    MalformedReply,
    endpoint_url_and_headers,
    http_problem,
    read_capped,
)
from audioeval.models.api.policy import EndpointPolicy, EndpointSettings, Problem
from audioeval.models.base import StreamingModel
from audioeval.types import AudioClip, Request, Response


def read_transcript(data: bytes) -> str:
    """The `text` of a transcription reply; ValueError when the reply is not one."""
    reply = json.loads(data)
    if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
        raise ValueError(f"not a transcription: {data[:120]!r}")
    return str(reply["text"]).strip()


class OpenAITranscriptionASR(StreamingModel):
    name = "openai"

    def __init__(
        self,
        *,
        model: Annotated[str, Arg("the transcription model", min_length=1)] = "whisper-1",
        base_url: Annotated[
            str | None, Arg("e.g. `http://localhost:8001/v1` for `vllm serve`", shown_default="OpenAI's")
        ] = None,
        api_key_env: Annotated[
            str, Arg("the environment variable holding the key (keys never come from flags)")
        ] = "OPENAI_API_KEY",
        language: Annotated[
            str | None, Arg("the spoken language (ISO 639-1, e.g. `en`), sent when given")
        ] = None,
        num_concurrent: Annotated[int, Arg("requests in flight at once to start with", ge=1)] = 8,
        max_concurrent: Annotated[
            int | None,
            Arg(
                "the most requests in flight the adaptive limit may reach",
                ge=1,
                shown_default="`num_concurrent`",
            ),
        ] = None,
        max_retries: Annotated[
            int,
            Arg("retries of 408/409/429/5xx, timeouts, dropped connections and malformed replies", ge=0),
        ] = 6,
        timeout: Annotated[float, Arg("seconds per attempt", gt=0)] = 120.0,
        max_retry_after: Annotated[float, Arg("the longest `Retry-After` honoured, in seconds", ge=0)] = 60.0,
        max_consecutive_failures: Annotated[
            int, Arg("answers failing in a row before the endpoint counts as down", ge=1)
        ] = 10,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.settings = EndpointSettings(
            model=str(model),
            base_url=base_url,
            api_key_env=api_key_env,
            num_concurrent=int(num_concurrent),
            max_concurrent=int(max_concurrent) if max_concurrent is not None else None,
            max_retries=int(max_retries),
            timeout=float(timeout),
            max_retry_after=float(max_retry_after),
            max_consecutive_failures=int(max_consecutive_failures),
        )
        self.policy = EndpointPolicy(self.settings, self.stats)
        self.language = language
        self.url, headers = endpoint_url_and_headers(
            self.settings.api_key(), base_url, "audio/transcriptions"
        )
        self.headers = {
            k: v for k, v in headers.items() if k.lower() != "content-type"
        }  # multipart sets its own
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "asr": self.name,
            "endpoint_model": self.settings.model,
            "base_url": self.settings.base_url,
            "language": self.language,
        }

    @property
    def max_in_flight(self) -> int:
        return int(self.settings.max_concurrent or self.settings.num_concurrent)

    def _current(self) -> Any:
        """A connection pool of the running loop (the evaluator runs one loop per task)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            import aiohttp

            self._session = aiohttp.ClientSession(
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout),
                trust_env=True,
            )
            self._loop = loop
        return self._session

    async def _attempt(self, wav: bytes) -> str:
        import aiohttp

        form = aiohttp.FormData()
        form.add_field("file", wav, filename="answer.wav", content_type="audio/wav")
        form.add_field("model", self.settings.model)
        form.add_field("response_format", "json")
        form.add_field("temperature", "0")
        if self.language:
            form.add_field("language", str(self.language))
        async with self._current().post(self.url, data=form) as reply:
            status, data, headers = reply.status, await read_capped(reply), reply.headers
        if status == 401:
            raise ModelError(
                f"{self.url} rejected the API key from ${self.settings.api_key_env} (HTTP 401): check it."
            )
        if status >= 400:
            raise HttpStatusError(HttpReply(status, headers, data))
        try:
            return read_transcript(data)
        except ValueError as err:
            raise MalformedReply(str(err)) from err

    def _classify(self, err: Exception) -> Problem | None:
        return http_problem(err, self.settings.timeout)

    async def transcribe(self, clip: AudioClip) -> Response:
        wav = clip.wav_bytes()  # a spoken answer's samples as the model sent them
        outcome = await self.policy.call(lambda: self._attempt(wav), self._classify)
        info = {"attempts": outcome.attempts} if outcome.attempts > 1 else {}
        return Response(text=outcome.value, failure=outcome.failure, latency_s=outcome.latency_s, info=info)

    async def generate_one(self, request: Request) -> Response:
        clips = request.clips
        if len(clips) != 1:
            return Response(text=None, error=f"openai ASR: expected one clip per request, got {len(clips)}")
        return await self.transcribe(clips[0])

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            session, self._session, self._loop = self._session, None, None
            await session.close()
