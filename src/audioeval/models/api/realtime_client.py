"""A pool of Realtime API sessions answering out-of-band responses, N in flight.

- Concurrency adapts exactly as for Chat Completions (concurrency.py): `num_concurrent` responses in flight to
  start with, halved on a rate limit or a timeout, one more per round of calm replies up to `max_concurrent`.
  Each response in flight holds one session; an idle session waits in the pool for the next response, so
  the pool holds at most as many sessions as responses were ever in flight at once.
- Sessions are renewed before `session_lifetime` seconds (the API ends a session after 60 minutes), when
  the server says one expired, and when a pooled session turns out closed by the server while idle (the
  request never reached it); none of these spends a retry. A session on which anything went wrong is closed.
- Retries: `error` events of type server_error, rate limits (waiting until the exhausted limit of the last
  `rate_limits.updated` resets, at most `max_retry_after`), failed responses with a server error, dropped
  sockets, malformed events, undecodable, truncated or missing audio, timeouts: up to `max_retries` times with
  jittered exponential backoff. An `error` event of any other type is the request's fault: a counted failure
  with the server's message at once, which never counts toward declaring the endpoint down.
- Each response has `timeout` seconds (session opening included): nothing waits forever.

WebSockets through aiohttp, not the `openai` SDK's `client.realtime.connect`: bench/bench_realtime.py measures
both on the same exchange (32 in flight against the fake server in another process). The SDK parses every
server event into a pydantic model (each audio delta included) and reconnects on its own, hiding a dropped
socket from the retry count; aiohttp reads a frame and `json.loads` it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from audioeval.errors import ModelError
from audioeval.models.api.client import EndpointDown, EndpointSettings
from audioeval.models.api.concurrency import AdaptiveLimit
from audioeval.models.api.http import endpoint_url_and_headers
from audioeval.models.api.realtime_session import Answer, RealtimeSession, SessionFailure
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.types import Failure

log = logging.getLogger("audioeval")

MAX_FREE_RENEWALS = 3  # session expiries (or pooled sessions found closed) one request may meet for free


def realtime_url_and_headers(
    api_key: str, base_url: str | None, model: str, websocket_url: str | None = None
) -> tuple[str, dict[str, str]]:
    """`{websocket_url or base_url}/realtime?model=...` with ws(s):// as the SDK forms it, and the headers of
    a Chat Completions request (the key, organisation, project) less the content type."""
    url, headers = endpoint_url_and_headers(api_key, websocket_url or base_url, "realtime")
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    query = urlencode([*parse_qsl(parts.query), ("model", model)])
    headers.pop("Content-Type", None)
    return urlunsplit(parts._replace(scheme=scheme, query=query)), headers


@dataclass
class Outcome:
    answer: Answer | None
    failure: Failure | None
    latency_s: float
    attempts: int
    renewals: int  # sessions renewed on the server's word (expired) while answering

    @property
    def error(self) -> str | None:
        return None if self.failure is None else str(self.failure)


class RealtimeClient:
    def __init__(
        self,
        settings: EndpointSettings,
        session_update: dict[str, Any],
        stats: EndpointStats,
        session_lifetime: float = 55 * 60.0,
        websocket_url: str | None = None,
    ) -> None:
        self.settings = settings
        self.session_update = session_update
        self.stats = stats
        self.session_lifetime = session_lifetime
        assert settings.max_concurrent is not None  # set by EndpointSettings.__post_init__
        self.limit = AdaptiveLimit(settings.num_concurrent, settings.max_concurrent, stats)
        self.url, self.headers = realtime_url_and_headers(
            settings.api_key(), settings.base_url, settings.model, websocket_url
        )
        self.sessions_opened = 0
        self.down: str | None = None
        self._idle: list[RealtimeSession] = []
        self._http: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._paused_until = 0.0  # monotonic time before which no response is sent (an exhausted rate limit)
        self._consecutive_failures = 0

    # --- sessions ----------------------------------------------------------------------------------------
    def _current_http(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            import aiohttp

            self._http = aiohttp.ClientSession(trust_env=True)  # wss through HTTPS_PROXY as the SDK would
            self._loop, self._idle = loop, []
        return self._http

    async def _session(self) -> RealtimeSession:
        """An idle session young enough to finish a response, else a new one."""
        http = self._current_http()
        while self._idle:
            session = self._idle.pop()
            if not session.closed and session.age < self.session_lifetime:
                return session
            await session.close()  # renewed before the server ends it
        try:
            session = await RealtimeSession.open(http, self.url, self.headers, self.session_update)
        except SessionFailure as failure:
            if failure.status == 401:
                raise ModelError(
                    f"{self.settings.label} rejected the API key from ${self.settings.api_key_env} "
                    "(HTTP 401 at the WebSocket handshake): check it."
                ) from None
            if failure.reason == "session refused" and not failure.retryable:
                raise ModelError(
                    f"{self.settings.label} refused the session settings ({failure.detail}); check --model_args "
                    "voice and output, or that the endpoint speaks the GA Realtime protocol."
                ) from None
            raise
        self.sessions_opened += 1
        return session

    async def aclose(self) -> None:
        """Close the sessions and the connection pool of the running loop (call before the loop ends)."""
        if self._http is None or self._loop is not asyncio.get_running_loop():
            return
        idle, self._idle = self._idle, []
        for session in idle:
            await session.close()
        http, self._http, self._loop = self._http, None, None
        await http.close()

    # --- one response ------------------------------------------------------------------------------------
    async def respond(self, create_event: str, audio_out: bool) -> Outcome:
        """The answer to one `response.create` event (its JSON), retried as configured. Raises EndpointDown when
        the endpoint failed too many responses in a row, ModelError when it rejects the key or the session."""
        attempts = renewals = 0
        started = time.perf_counter()
        while True:
            if self.down is not None:
                raise EndpointDown(self.down)
            attempts += 1
            if attempts > 1:
                self.stats.retries += 1
            slot = await self.limit.acquire()
            attempt_started = time.perf_counter()
            try:
                answer = await self._attempt(create_event, audio_out)
            except SessionFailure as failure:
                self._count(failure)
                self.limit.release(slot, overloaded=failure.overloaded)
                if failure.free and renewals < MAX_FREE_RENEWALS:
                    renewals += 1
                    attempts -= 1  # the session's time was up, not the request's turn
                    continue
                if not failure.retryable or attempts > self.settings.max_retries:
                    return self._give_up(failure, attempts, renewals, time.perf_counter() - started)
                await self._wait(failure, attempts)
                continue
            except BaseException:
                self.limit.release(slot)
                raise
            self.limit.release(slot)
            self.stats.latency.add(time.perf_counter() - attempt_started)
            self._consecutive_failures = 0
            return Outcome(answer, None, time.perf_counter() - started, attempts, renewals)

    async def _attempt(self, create_event: str, audio_out: bool) -> Answer:
        import aiohttp

        delay = self._paused_until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        session: RealtimeSession | None = None
        try:
            async with asyncio.timeout(self.settings.timeout):
                session = await self._session()
                answer = await session.respond(create_event, audio_out)
        except SessionFailure as failure:
            self._note_rate_limit(session)
            if session is not None:
                await session.close()
            raise failure from None
        except TimeoutError:
            if session is not None:
                await session.close()
            raise SessionFailure(
                "timeout",
                "timeout",
                f"no response.done within {self.settings.timeout:g} s",
                retryable=True,
                overloaded=True,
            ) from None
        except (aiohttp.ClientError, ConnectionError) as err:
            if session is not None:
                await session.close()
            raise SessionFailure(
                "connection", "connection failed", " ".join(str(err).split())[:200], retryable=True
            ) from None
        except BaseException:  # cancelled (Ctrl-C): the socket goes with the response it was reading
            if session is not None:
                await session.close()
            raise
        self._note_rate_limit(session)
        self._idle.append(session)
        if answer.unknown_events:
            log.debug("%s: ignored events %s", self.settings.label, sorted(set(answer.unknown_events)))
        return answer

    def _note_rate_limit(self, session: RealtimeSession | None) -> None:
        if session is not None and session.rate_limit_wait:
            wait = min(session.rate_limit_wait, self.settings.max_retry_after)
            self._paused_until = max(self._paused_until, time.monotonic() + wait)
            session.rate_limit_wait = None

    def _count(self, failure: SessionFailure) -> None:
        if failure.kind == "timeout":
            self.stats.timeouts += 1
        elif failure.kind == "rate_limited":  # as HTTP 429 is counted for Chat Completions
            self.stats.http_429 += 1
        elif failure.kind == "server" and not failure.free:  # server errors, failed responses, 5xx handshakes
            self.stats.http_5xx += 1

    def _give_up(self, failure: SessionFailure, attempts: int, renewals: int, elapsed: float) -> Outcome:
        detail = f"{failure.reason} after {attempts} attempt(s): {failure.detail}"
        if failure.retryable or failure.free:  # the endpoint's trouble, not one request's
            self._consecutive_failures += 1
        if self._consecutive_failures >= self.settings.max_consecutive_failures and self.down is None:
            self.down = (
                f"{self.settings.label} is not answering: {self._consecutive_failures} responses in a row failed "
                f"after up to {self.settings.max_retries + 1} attempts each; last: {failure.reason}: "
                f"{failure.detail}. Responses received so far are in the response cache: run the same command "
                "again once the endpoint is back and only the missing requests are sent."
            )
            raise EndpointDown(self.down)
        return Outcome(None, Failure(failure.kind, detail, failure.status), elapsed, attempts, renewals)

    async def _wait(self, failure: SessionFailure, attempts: int) -> None:
        if failure.retry_after is not None:
            delay = min(failure.retry_after, self.settings.max_retry_after)
        else:
            delay = min(self.settings.backoff_max, self.settings.backoff_base * 2 ** (attempts - 1))
            delay *= 0.5 + random.random() / 2
        level = logging.INFO if delay > 5.0 else logging.DEBUG
        log.log(
            level,
            "%s: %s; waiting %.1f s before attempt %d of %d",
            self.settings.label,
            failure.reason,
            delay,
            attempts + 1,
            self.settings.max_retries + 1,
        )
        await asyncio.sleep(delay)
