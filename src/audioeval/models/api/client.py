"""An asynchronous client for one OpenAI-compatible Chat Completions endpoint, shared by the `openai` model
backend and the LLM judges.

- Concurrency adapts (concurrency.py): `num_concurrent` requests in flight to start with, fewer while the
  endpoint answers 429/503 or times out, back up to `max_concurrent` when it is calm.
- Retries: 408/409/429/5xx, timeouts, dropped connections and malformed replies are retried up to
  `max_retries` times with jittered exponential backoff; a Retry-After (or retry-after-ms) header is
  honoured up to `max_retry_after` seconds (default 60) and any wait longer than a few seconds is logged at
  INFO with the endpoint and the reason. (The `openai` SDK's retry loop could not do this job: its
  Retry-After ceiling is a module constant, a longer Retry-After makes it give up instead of waiting the
  ceiling, and neither the concurrency controller nor the per-endpoint figures would hear about the attempts
  it retries. Requests go out through http.py, which says why not through the SDK at all.)
- Each request's body is built once by the caller (body.py) and sent as is on every attempt; the caller's
  `parse` reads the reply.
- An endpoint that fails `max_consecutive_failures` requests in a row (each after its retries) is declared
  down: `EndpointDown` names it and the last status, and later requests fail at once.
- The API key is read from an environment variable and never stored in anything the harness writes.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from audioeval.errors import ModelError
from audioeval.models.api.body import JsonBody
from audioeval.models.api.concurrency import AdaptiveLimit, Slot
from audioeval.models.api.http import HttpEndpoint, HttpReply, endpoint_url_and_headers
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.redact import env_name_problem, env_name_refusal
from audioeval.types import Failure, FailureKind

log = logging.getLogger("audioeval")

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504}
REFUSED_STATUS = {
    400,
    413,
    422,
}  # the server refused this request (too many clips, too long): its fault alone
OVERLOAD_STATUS = {429, 503}  # with timeouts: the signals that lower the concurrency limit
LONG_WAIT_S = 5.0  # waits longer than this are logged at INFO

T = TypeVar("T")


class EndpointDown(ModelError):
    """An endpoint failed many requests in a row; the message names it and its last status."""


@dataclass
class EndpointSettings:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    num_concurrent: int = 8
    max_concurrent: int | None = None  # default: num_concurrent (the limit may drop and recover, not grow)
    max_retries: int = 6
    timeout: float = 120.0
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    max_retry_after: float = 60.0
    max_consecutive_failures: int = 10

    def __post_init__(self) -> None:
        problem = env_name_problem(self.api_key_env)
        if problem:  # a key pasted in place of the variable's name would be echoed by "no API key: set ..."
            raise ModelError(env_name_refusal("", "api_key_env", problem))
        if self.num_concurrent < 1:
            raise ModelError(f"num_concurrent={self.num_concurrent}: it must be at least 1.")
        if self.max_concurrent is None:
            self.max_concurrent = self.num_concurrent
        if self.max_concurrent < self.num_concurrent:
            raise ModelError(
                f"max_concurrent={self.max_concurrent} is below num_concurrent={self.num_concurrent}: "
                "raise max_concurrent or lower num_concurrent."
            )
        if self.max_retry_after < 0 or self.max_retries < 0 or self.max_consecutive_failures < 1:
            raise ModelError(
                "max_retry_after and max_retries must be >= 0 and max_consecutive_failures >= 1 "
                f"(got {self.max_retry_after}, {self.max_retries}, {self.max_consecutive_failures})."
            )

    @property
    def label(self) -> str:
        """How logs and errors name this endpoint."""
        return f"{self.base_url or 'https://api.openai.com/v1'} (model {self.model})"

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


def status_kind(status: int) -> FailureKind:
    """The kind of failure an HTTP error status is."""
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server"
    if status in REFUSED_STATUS:
        return "refused"
    return "http"


@dataclass
class Completion(Generic[T]):
    value: T | None  # what the reply parser made of the reply; None when the request failed
    failure: Failure | None
    latency_s: float
    attempts: int

    @property
    def error(self) -> str | None:
        return None if self.failure is None else str(self.failure)


@dataclass
class _Failure:
    """One failed attempt, as the retry loop sees it."""

    kind: FailureKind
    reason: str  # "HTTP 503", "APITimeoutError", "APIConnectionError", "malformed reply"
    detail: str
    retryable: bool
    overloaded: bool
    retry_after: float | None = None
    status: int | None = None


class _StatusError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, reply: HttpReply) -> None:
        super().__init__(f"HTTP {reply.status}")
        self.status = reply.status
        self.message = error_message(reply.data)
        self.headers = reply.headers


class _Malformed(Exception):
    """A reply that is not what was asked for (not JSON, not a chat completion)."""


def error_message(data: bytes) -> str:
    """The message of an error reply: OpenAI's `error.message`, vLLM's `message`, FastAPI's `detail`, else
    the reply's text."""
    text = data.decode("utf-8", "replace")
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    if isinstance(reply, dict):
        error = reply.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            if reply.get(key):
                return str(reply[key])
    return text


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from retry-after-ms, or Retry-After as seconds or an HTTP date; None when absent."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


class ChatClient:
    def __init__(self, settings: EndpointSettings, stats: EndpointStats | None = None) -> None:
        self.settings = settings
        self.stats = stats if stats is not None else EndpointStats()
        assert settings.max_concurrent is not None  # set by EndpointSettings.__post_init__
        self.limit = AdaptiveLimit(settings.num_concurrent, settings.max_concurrent, self.stats)
        url, headers = endpoint_url_and_headers(settings.api_key(), settings.base_url, "chat/completions")
        self.http = HttpEndpoint(url, headers, settings.max_concurrent, settings.timeout)
        self._consecutive_failures = 0
        self.down: str | None = None  # the message once the endpoint is declared down
        self._last_backoff_log = 0.0

    async def aclose(self) -> None:
        """Close the connection pool of the running loop (call before the loop ends)."""
        await self.http.aclose()

    # ------------------------------------------------------------------------------------------------------
    async def complete(self, body: JsonBody, parse: Callable[[Any], T]) -> Completion[T]:
        """Send one request body, retrying as configured; `parse` turns the reply's JSON into the value
        (raising ValueError for a reply that is not one: retried as a malformed reply). Raises EndpointDown when the endpoint has
        failed too many requests in a row, ModelError when it rejects the API key. Counts retries, 429s, 5xx
        and timeouts in `stats` (the serving path counts requests and failures)."""
        attempts = 0
        started: float | None = None
        while True:
            if self.down is not None:
                raise EndpointDown(self.down)
            attempts += 1
            if attempts > 1:
                self.stats.retries += 1
            slot = await self.limit.acquire()
            attempt_started = time.perf_counter()
            started = started if started is not None else attempt_started
            failure: _Failure | None = None
            try:
                value = await self._attempt(body, parse)
            except Exception as err:
                failure = self._classify(err)
                if failure is None:  # the API key was rejected, or a bug: not something to retry
                    self.limit.release(slot)
                    raise
            except BaseException:  # cancelled (Ctrl-C, a failed run): give the slot back
                self.limit.release(slot)
                raise
            if failure is None:
                self.limit.release(slot)
                self.stats.latency.add(time.perf_counter() - attempt_started)
                self._consecutive_failures = 0
                return Completion(value, None, time.perf_counter() - started, attempts)
            self._count(failure)
            self._released(slot, failure)
            if not failure.retryable or attempts > self.settings.max_retries:
                return self._give_up(failure, attempts, time.perf_counter() - started)
            await self._wait(failure, attempts)

    async def _attempt(self, body: JsonBody, parse: Callable[[Any], T]) -> T:
        """What `parse` makes of the reply; _StatusError for an HTTP error status, _Malformed for a reply that
        is not JSON or that `parse` refuses."""
        reply = await self.http.post(body)
        if reply.status == 401:
            raise ModelError(
                f"{self.settings.label} rejected the API key from ${self.settings.api_key_env} (HTTP 401): check it."
            )
        if reply.status >= 400:
            raise _StatusError(reply)
        try:
            return parse(json.loads(reply.data))
        except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors too
            raise _Malformed(str(err)) from err

    def _classify(self, err: Exception) -> _Failure | None:
        """What went wrong with an attempt; None for errors that are not the endpoint's (re-raised)."""
        import aiohttp

        if isinstance(err, ModelError):
            return None
        if isinstance(err, TimeoutError):  # before ClientError: aiohttp's timeouts are both
            return _Failure(
                "timeout", "APITimeoutError", f"no reply within {self.settings.timeout:g} s", True, True
            )
        if isinstance(err, _StatusError):
            return _Failure(
                status_kind(err.status),
                f"HTTP {err.status}",
                _short(err.message),
                err.status in RETRYABLE_STATUS,
                err.status in OVERLOAD_STATUS,
                parse_retry_after(err.headers),
                err.status,
            )
        if isinstance(err, aiohttp.ClientError | ConnectionError):
            return _Failure(
                "connection", "APIConnectionError", _short(str(err) or type(err).__name__), True, False
            )
        if isinstance(err, _Malformed):  # an HTML page, broken JSON, no choices
            return _Failure("malformed", "malformed reply", _short(str(err)), True, False)
        return None

    def _count(self, failure: _Failure) -> None:
        if failure.kind == "timeout":
            self.stats.timeouts += 1
        elif failure.status == 429:
            self.stats.http_429 += 1
        elif failure.status is not None and failure.status >= 500:
            self.stats.http_5xx += 1

    def _released(self, slot: Slot, failure: _Failure) -> None:
        if self.limit.release(slot, overloaded=failure.overloaded):
            now = time.monotonic()
            if now - self._last_backoff_log > 10.0:  # at most one line per 10 s under sustained overload
                self._last_backoff_log = now
                log.info(
                    "%s: %s, lowering concurrency to %d requests in flight",
                    self.settings.label,
                    failure.reason,
                    self.limit.allowed,
                )

    def _give_up(self, failure: _Failure, attempts: int, elapsed: float) -> Completion:
        status = f"{failure.reason}: {failure.detail}" if failure.detail else failure.reason
        if failure.kind == "refused":  # the endpoint answered; the request was at fault: it never counts
            self._consecutive_failures = 0  # toward declaring the endpoint down
            return Completion(None, _final(failure, attempts), elapsed, attempts)
        self._consecutive_failures += 1
        if self._consecutive_failures >= self.settings.max_consecutive_failures and self.down is None:
            self.down = (
                f"{self.settings.label} is not answering: {self._consecutive_failures} requests in a row failed "
                f"after up to {self.settings.max_retries + 1} attempts each; last status: {status}. "
                "Responses received so far are in the response cache: run the same command again once the "
                "endpoint is back and only the missing requests are sent."
            )
            raise EndpointDown(self.down)
        return Completion(None, _final(failure, attempts), elapsed, attempts)

    async def _wait(self, failure: _Failure, attempts: int) -> None:
        cap = self.settings.max_retry_after
        if failure.retry_after is not None:
            delay = min(failure.retry_after, cap)
            why = f"{failure.reason} with Retry-After {failure.retry_after:g} s" + (
                f" (capped at {cap:g} s)" if failure.retry_after > cap else ""
            )
        else:
            delay = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempts - 1))
            delay *= 0.5 + random.random() / 2
            why = failure.reason
        level = logging.INFO if delay > LONG_WAIT_S else logging.DEBUG
        log.log(
            level,
            "%s: %s; waiting %.1f s before attempt %d of %d",
            self.settings.label,
            why,
            delay,
            attempts + 1,
            self.settings.max_retries + 1,
        )
        await asyncio.sleep(delay)


def _final(failure: _Failure, attempts: int) -> Failure:
    message = f"{failure.reason} after {attempts} attempt(s): {failure.detail}"
    return Failure(failure.kind, message, failure.status)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
