"""One policy for every endpoint the harness calls over the network: Chat Completions (the `openai` backend and
the LLM judges), the Realtime API and `/audio/transcriptions` (`--asr openai`).

- **Concurrency** adapts (concurrency.py, AIMD): `num_concurrent` attempts on the wire to start with, halved on
  an overload signal (a rate limit, a 503, a timeout), one more per round of calm replies up to `max_concurrent`.
  A slot is held only while an attempt is on the wire; a request waiting to retry gives its slot back.
- **Retries**: a failure the client calls retryable is retried up to `max_retries` times, after the server's
  wait hint (Retry-After, retry-after-ms, an exhausted rate limit's reset) capped at `max_retry_after`, else a
  jittered exponential backoff (`backoff_base` · 2^n, at most `backoff_max`, times a factor drawn from
  [0.5, 1)). Waits longer than a few seconds are logged at INFO with the endpoint and the reason. A failure
  marked `free` (a Realtime session whose time was up) is retried without spending a retry, a few times.
- **Endpoint down**: `max_consecutive_failures` requests in a row that failed after their retries (anything but
  a request the server refused as invalid, which proves it is up) declare the endpoint down: `EndpointDown`
  names it and the last failure, and every later request fails at once.
- **Pauses**: `pause(seconds)` holds every new attempt back (a Realtime rate limit at 0 until it resets).

A client only says what went wrong with one attempt (`Problem`: its kind, whether a retry makes sense, whether
it is an overload signal, the server's wait hint) and reads the reply; it never counts, waits or retries.
The figures every endpoint reports (retries, 429s, 5xx, timeouts, latency of answered attempts, in flight) are
counted here, so they mean the same for every client.

Why not tenacity: the loop needs, per attempt, a concurrency slot taken and given back with the attempt's
overload signal, a wait chosen by the failure (the server's hint or the backoff), retries that spend no
attempt, and a run of failures shared by all requests of the endpoint. tenacity would hold only the sleep
arithmetic of that; the rest would wrap around it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import urlsplit

from audioeval.errors import ModelError
from audioeval.models.api.concurrency import AdaptiveLimit, Slot
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.redact import env_name_problem, env_name_refusal, register_secret, register_url_credentials
from audioeval.types import Failure, FailureKind

log = logging.getLogger("audioeval")

T = TypeVar("T")
LONG_WAIT_S = 5.0  # waits longer than this are logged at INFO
MAX_FREE_RETRIES = 3  # retries that spend no attempt (a session's time was up) one request may take
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]", "::1")


class EndpointDown(ModelError):
    """An endpoint failed many requests in a row; the message names it and its last failure."""


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
        # the key and the URL's credentials are masked in everything written from now on (redact.py)
        register_secret(os.environ.get(self.api_key_env))
        register_url_credentials(self.base_url)
        if self.base_url is not None:
            check_url("base_url", self.base_url)
        # each number's own range is declared on the backends' arguments (checked before they are made)
        if self.max_concurrent is None:
            self.max_concurrent = self.num_concurrent
        if self.max_concurrent < self.num_concurrent:
            raise ModelError(
                f"max_concurrent={self.max_concurrent} is below num_concurrent={self.num_concurrent}: "
                "raise max_concurrent or lower num_concurrent."
            )

    @property
    def label(self) -> str:
        """How logs and errors name this endpoint."""
        return f"{self.base_url or 'https://api.openai.com/v1'} (model {self.model})"

    def api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url and any(h in self.base_url for h in _LOOPBACK):
            return "local-no-key"  # local servers (vllm serve, test servers) usually accept any key
        raise ModelError(
            f"no API key: set the environment variable {self.api_key_env} (or name another one with "
            "api_key_env=VAR). Keys are read from the environment only."
        )

    def retry_wait_budget(self) -> float:
        """The longest one request's retries wait on the backoff alone (no Retry-After): 63 s by default."""
        return sum(min(self.backoff_max, self.backoff_base * 2**i) for i in range(self.max_retries))


def check_url(name: str, url: str, schemes: tuple[str, ...] = ("http", "https")) -> None:
    """A URL argument with one of `schemes` and a host; ModelError naming the argument otherwise."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as err:
        raise ModelError(f"{name}={url}: not a URL ({err}); e.g. {schemes[0]}://127.0.0.1:8000/v1.") from None
    if parts.scheme not in schemes or not host:
        raise ModelError(
            f"{name}={url}: not a URL with a host and a scheme {' or '.join(schemes)}; e.g. {schemes[0]}://127.0.0.1:8000/v1."
        )


@dataclass(frozen=True)
class Problem:
    """What went wrong with one attempt, as the client that made it classifies it."""

    kind: FailureKind
    reason: str  # short: "HTTP 503", "APITimeoutError", "error server_error", "malformed event"
    detail: str  # the server's message or what was wrong with the reply
    retryable: bool
    overloaded: bool = False  # an overload signal: lowers the concurrency limit
    retry_after: float | None = None  # the server's wait hint, in seconds
    status: int | None = None  # the HTTP status, when there was one
    free: bool = False  # retried without spending a retry (a Realtime session whose time was up)

    @property
    def counts_toward_down(self) -> bool:
        """A request the server refused as invalid shows the endpoint is up; anything else may show it is not."""
        return self.kind != "refused"

    def failure(self, attempts: int) -> Failure:
        return Failure(self.kind, f"{self.reason} after {attempts} attempt(s): {self.detail}", self.status)


class Rejected(Exception):
    """Raised by an attempt that met a failure it has already classified."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{problem.reason}: {problem.detail}")
        self.problem = problem


@dataclass
class Outcome(Generic[T]):
    """One request after its retries: the value, or the failure it gave up on."""

    value: T | None
    failure: Failure | None
    latency_s: float  # first attempt sent -> the outcome
    attempts: int
    free_retries: int = 0  # retries that spent no attempt (sessions renewed)

    @property
    def error(self) -> str | None:
        return None if self.failure is None else str(self.failure)


Classify = Callable[[Exception], Problem | None]  # None: not the endpoint's failure (re-raised)


class EndpointPolicy:
    """The retries, the adaptive concurrency limit, the pauses and the endpoint-down state of one endpoint."""

    def __init__(self, settings: EndpointSettings, stats: EndpointStats, noun: str = "requests") -> None:
        self.settings = settings
        self.stats = stats
        self.noun = noun  # what the endpoint-down message counts: "requests", "responses"
        assert settings.max_concurrent is not None  # set by EndpointSettings.__post_init__
        self.limit = AdaptiveLimit(settings.num_concurrent, settings.max_concurrent, stats)
        self.down: str | None = None  # the message once the endpoint is declared down
        self._consecutive_failures = 0
        self._paused_until = 0.0  # monotonic time before which no attempt starts
        self._last_backoff_log = 0.0

    def pause(self, seconds: float) -> None:
        """No new attempt starts for `seconds` (at most `max_retry_after`)."""
        wait = min(max(0.0, seconds), self.settings.max_retry_after)
        self._paused_until = max(self._paused_until, time.monotonic() + wait)

    async def call(self, attempt: Callable[[], Awaitable[T]], classify: Classify) -> Outcome[T]:
        """Run `attempt` until it gives a value, a failure that is not worth retrying, or the retries run out.
        `classify` says what each exception the attempt raised means (None: re-raise it; `Rejected` carries its
        own Problem). Raises EndpointDown once the endpoint is declared down."""
        attempts = free = 0
        started = time.perf_counter()
        while True:
            if self.down is not None:
                raise EndpointDown(self.down)
            attempts += 1
            if attempts > 1:
                self.stats.retries += 1
            delay = self._paused_until - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            slot = await self.limit.acquire()
            attempt_started = time.perf_counter()
            try:
                value = await attempt()
            except Exception as err:
                problem = err.problem if isinstance(err, Rejected) else classify(err)
                if problem is None:  # the API key was rejected, or a bug: not something to retry
                    self.limit.release(slot)
                    raise
            except BaseException:  # cancelled (Ctrl-C, a failed run): give the slot back
                self.limit.release(slot)
                raise
            else:
                self.limit.release(slot)
                self.stats.latency.add(time.perf_counter() - attempt_started)
                self._consecutive_failures = 0
                return Outcome(value, None, time.perf_counter() - started, attempts, free)
            self._count(problem)
            self._released(slot, problem)
            if problem.free and free < MAX_FREE_RETRIES:
                free += 1
                attempts -= 1  # the session's time was up, not the request's turn
                continue
            if not problem.retryable or attempts > self.settings.max_retries:
                failure = self._give_up(problem, attempts)
                return Outcome(None, failure, time.perf_counter() - started, attempts, free)
            await asyncio.sleep(self._delay(problem, attempts))

    def _count(self, problem: Problem) -> None:
        if problem.kind == "timeout":
            self.stats.timeouts += 1
        elif problem.kind == "rate_limited":
            self.stats.http_429 += 1
        elif problem.kind == "server" and not problem.free:
            self.stats.http_5xx += 1

    def _released(self, slot: Slot, problem: Problem) -> None:
        if self.limit.release(slot, overloaded=problem.overloaded):
            now = time.monotonic()
            if now - self._last_backoff_log > 10.0:  # at most one line per 10 s under sustained overload
                self._last_backoff_log = now
                log.info(
                    "%s: %s, lowering concurrency to %d %s in flight",
                    self.settings.label,
                    problem.reason,
                    self.limit.allowed,
                    self.noun,
                )

    def _give_up(self, problem: Problem, attempts: int) -> Failure:
        if not problem.counts_toward_down:
            self._consecutive_failures = 0  # the endpoint answered; the request was at fault
            return problem.failure(attempts)
        self._consecutive_failures += 1
        if self._consecutive_failures >= self.settings.max_consecutive_failures and self.down is None:
            last = f"{problem.reason}: {problem.detail}" if problem.detail else problem.reason
            self.down = (
                f"{self.settings.label} is not answering: {self._consecutive_failures} {self.noun} in a row "
                f"failed after up to {self.settings.max_retries + 1} attempts each; last status: {last}. "
                "Responses received so far are in the response cache: run the same command again once the "
                "endpoint is back and only the missing requests are sent."
            )
            raise EndpointDown(self.down)
        return problem.failure(attempts)

    def _delay(self, problem: Problem, attempts: int) -> float:
        cap = self.settings.max_retry_after
        if problem.retry_after is not None:
            delay = min(problem.retry_after, cap)
            why = f"{problem.reason} with Retry-After {problem.retry_after:g} s" + (
                f" (capped at {cap:g} s)" if problem.retry_after > cap else ""
            )
        else:
            delay = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempts - 1))
            delay *= 0.5 + random.random() / 2
            why = problem.reason
        log.log(
            logging.INFO if delay > LONG_WAIT_S else logging.DEBUG,
            "%s: %s; waiting %.1f s before attempt %d of %d",
            self.settings.label,
            why,
            delay,
            attempts + 1,
            self.settings.max_retries + 1,
        )
        return delay
