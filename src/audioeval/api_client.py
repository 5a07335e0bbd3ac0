"""An asynchronous client for OpenAI-compatible Chat Completions endpoints, shared by the `openai` model
backend and the LLM judges: bounded concurrency, retries with exponential backoff that honour Retry-After
on 429 and 5xx, per-request timeouts. The API key is read from an environment variable and never stored in
anything the harness writes."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any

from audioeval.errors import ModelError

log = logging.getLogger("audioeval")

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}


@dataclass
class EndpointSettings:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    num_concurrent: int = 8
    max_retries: int = 6
    timeout: float = 120.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0

    def api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url and any(h in self.base_url for h in ("127.0.0.1", "localhost", "[::1]")):
            return "local-no-key"  # local servers (vllm serve, test servers) usually accept any key
        raise ModelError(
            f"no API key: set the environment variable {self.api_key_env} (or name another one with "
            "api_key_env=VAR). Keys are read from the environment only."
        )


@dataclass
class Completion:
    text: str | None
    error: str | None
    latency_s: float
    attempts: int


def _retry_after(err: Exception) -> float | None:
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        ms = headers.get("retry-after-ms")
        return float(ms) / 1000.0 if ms else None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class ChatClient:
    def __init__(self, settings: EndpointSettings) -> None:
        self.settings = settings
        self._key = settings.api_key()

    def complete_many(self, payloads: list[dict[str, Any]]) -> list[Completion]:
        """Send each payload (messages + sampling settings) concurrently; results in input order."""
        if not payloads:
            return []
        return asyncio.run(self._complete_all(payloads))

    async def _complete_all(self, payloads: list[dict[str, Any]]) -> list[Completion]:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            api_key=self._key, base_url=self.settings.base_url, timeout=self.settings.timeout, max_retries=0
        )
        semaphore = asyncio.Semaphore(max(1, self.settings.num_concurrent))
        try:
            return await asyncio.gather(*(self._complete_one(client, semaphore, p) for p in payloads))
        finally:
            await client.close()

    async def _complete_one(
        self, client: Any, semaphore: asyncio.Semaphore, payload: dict[str, Any]
    ) -> Completion:
        import openai

        attempts = 0
        started = time.perf_counter()
        while True:
            attempts += 1
            async with semaphore:
                try:
                    result = await client.chat.completions.create(model=self.settings.model, **payload)
                    if not getattr(result, "choices", None):
                        raise ValueError(f"not a chat completion: {_short(str(result), 120)}")
                    text = result.choices[0].message.content
                    return Completion(text or "", None, time.perf_counter() - started, attempts)
                except openai.AuthenticationError as err:
                    raise ModelError(
                        f"the endpoint rejected the API key from ${self.settings.api_key_env} (HTTP 401): check it."
                    ) from err
                except (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError) as err:
                    status = getattr(err, "status_code", None)
                    retryable = status is None or status in RETRYABLE_STATUS
                    reason = f"HTTP {status}" if status else type(err).__name__
                    if not retryable or attempts > self.settings.max_retries:
                        detail = _short(getattr(err, "message", str(err)))
                        return Completion(
                            None,
                            f"{reason} after {attempts} attempt(s): {detail}",
                            time.perf_counter() - started,
                            attempts,
                        )
                    delay = _retry_after(err)
                except (openai.APIError, ValueError, AttributeError, TypeError) as err:
                    # a reply that is not a chat completion (an HTML page, broken JSON, no choices)
                    reason, delay = "malformed reply", None
                    if attempts > self.settings.max_retries:
                        return Completion(
                            None,
                            f"{reason} after {attempts} attempt(s): {_short(str(err))}",
                            time.perf_counter() - started,
                            attempts,
                        )
            if delay is None:
                delay = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempts - 1))
                delay *= 0.5 + random.random() / 2
            log.debug("retrying after %s in %.2fs (attempt %d)", reason, delay, attempts)
            await asyncio.sleep(delay)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
