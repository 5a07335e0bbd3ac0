"""`--asr openai`: any OpenAI-compatible `POST <base_url>/audio/transcriptions` endpoint (OpenAI's whisper-1 or
gpt-4o-transcribe, `vllm serve openai/whisper-large-v3`).

    --asr openai --asr_args model=whisper-1
    --asr openai --asr_args model=openai/whisper-large-v3,base_url=http://localhost:8001/v1

Each clip goes as a multipart form (`file` = WAV, `model`, `response_format=json`, `temperature=0`, and
`language` when given), built with aiohttp, which the chat client already uses. Up to `num_concurrent`
requests are in flight; 408/409/429/5xx, timeouts and dropped connections are retried up to `max_retries`
times with backoff (Retry-After honoured up to `max_retry_after` s); what still fails is a counted failure
with its reason. The key comes from the environment variable named by `api_key_env`, never from a flag.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

from audioeval.audio.wav import encode_wav
from audioeval.errors import ModelError
from audioeval.models.api.client import (
    RETRYABLE_STATUS,
    EndpointSettings,
    error_message,
    parse_retry_after,
    status_kind,
)
from audioeval.models.api.http import endpoint_url_and_headers
from audioeval.models.base import StreamingModel
from audioeval.types import AudioClip, Failure, FailureKind, Request, Response


class _Retryable(Exception):
    def __init__(
        self, kind: FailureKind, reason: str, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(reason)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status


class _Refused(Exception):
    """An HTTP error status a retry would meet again (400, 413, ...)."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


def read_transcript(data: bytes) -> str:
    """The `text` of a transcription reply; ValueError when the reply is not one."""
    reply = json.loads(data)
    if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
        raise ValueError(f"not a transcription: {data[:120]!r}")
    return str(reply["text"]).strip()


class OpenAITranscriptionASR(StreamingModel):
    name = "openai"
    arg_minimums = {"num_concurrent": 1, "max_retries": 0, "timeout": 0.001, "max_retry_after": 0}

    def __init__(
        self,
        *,
        model: str = "whisper-1",
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        language: str | None = None,
        num_concurrent: int = 8,
        max_retries: int = 6,
        timeout: float = 120.0,
        max_retry_after: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.settings = EndpointSettings(
            model=str(model),
            base_url=base_url,
            api_key_env=api_key_env,
            num_concurrent=int(num_concurrent),
            max_retries=int(max_retries),
            timeout=float(timeout),
            max_retry_after=float(max_retry_after),
        )
        self.language = language
        self.url, headers = endpoint_url_and_headers(
            self.settings.api_key(), base_url, "audio/transcriptions"
        )
        self.headers = {
            k: v for k, v in headers.items() if k.lower() != "content-type"
        }  # multipart sets its own
        self._limit: asyncio.Semaphore | None = None
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
        return self.settings.num_concurrent

    def _ready(self) -> tuple[Any, asyncio.Semaphore]:
        """A session and a limit of the running loop (the evaluator runs one loop per task)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            import aiohttp

            self._session = aiohttp.ClientSession(
                headers=self.headers,
                timeout=aiohttp.ClientTimeout(total=self.settings.timeout),
                trust_env=True,
            )
            self._limit = asyncio.Semaphore(self.settings.num_concurrent)
            self._loop = loop
        assert self._limit is not None
        return self._session, self._limit

    async def _attempt(self, wav: bytes) -> str:
        import aiohttp

        session, limit = self._ready()
        form = aiohttp.FormData()
        form.add_field("file", wav, filename="answer.wav", content_type="audio/wav")
        form.add_field("model", self.settings.model)
        form.add_field("response_format", "json")
        form.add_field("temperature", "0")
        if self.language:
            form.add_field("language", str(self.language))
        async with limit:
            self.stats.enter()
            try:
                async with session.post(self.url, data=form) as reply:
                    status, data, headers = reply.status, await reply.read(), reply.headers
            except (TimeoutError, aiohttp.ClientError, ConnectionError) as err:
                kind: FailureKind = "timeout" if isinstance(err, TimeoutError) else "connection"
                raise _Retryable(
                    kind, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                ) from err
            finally:
                self.stats.leave()
        if status == 401:
            raise ModelError(
                f"{self.url} rejected the API key from ${self.settings.api_key_env} (HTTP 401): check it."
            )
        if status >= 500 or status == 429:
            self.stats.http_429 += status == 429
            self.stats.http_5xx += status >= 500
        if status >= 400:
            reason = f"HTTP {status}: {' '.join(error_message(data).split())[:200]}"
            if status in RETRYABLE_STATUS:
                raise _Retryable(status_kind(status), reason, parse_retry_after(headers), status)
            raise _Refused(reason, status)
        try:
            return read_transcript(data)
        except ValueError as err:
            raise _Retryable("malformed", f"malformed reply: {err}") from err

    async def transcribe(self, clip: AudioClip) -> Response:
        wav = encode_wav(clip.samples, clip.sampling_rate)
        started = time.perf_counter()
        for attempt in range(self.settings.max_retries + 1):
            try:
                text = await self._attempt(wav)
            except _Retryable as err:
                if attempt == self.settings.max_retries:
                    failure = Failure(err.kind, f"{err} after {attempt + 1} attempt(s)", err.status)
                    return Response(text=None, failure=failure)
                self.stats.retries += 1
                wait = err.retry_after
                if wait is None:
                    wait = min(self.settings.backoff_max, self.settings.backoff_base * 2**attempt) * (
                        0.5 + random.random() / 2
                    )
                await asyncio.sleep(min(wait, self.settings.max_retry_after))
            except _Refused as err:  # asking again gives the same answer
                return Response(text=None, failure=Failure(status_kind(err.status), str(err), err.status))
            else:
                return Response(text=text, latency_s=time.perf_counter() - started)
        raise AssertionError("unreachable")

    async def generate_one(self, request: Request) -> Response:
        clips = request.clips
        if len(clips) != 1:
            return Response(text=None, error=f"openai ASR: expected one clip per request, got {len(clips)}")
        return await self.transcribe(clips[0])

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            session, self._session, self._loop = self._session, None, None
            await session.close()
