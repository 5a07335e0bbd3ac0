"""A pool of Realtime API sessions answering out-of-band responses, N in flight.

- Retries, their waits, the adaptive number in flight and endpoint-down detection are the endpoint policy's
  (policy.py), exactly as for Chat Completions; this client classifies what went wrong with an attempt
  (realtime_session.py raises each failure with its Problem) and keeps the sessions.
- Each response in flight holds one session (the API would let several out-of-band responses share one:
  bench/bench_realtime.py --multiplex measured no gain, and a session of its own keeps a failure on the one
  response it belongs to); an idle session waits in the pool for the next response, so the pool holds at most
  as many sessions as responses were ever in flight at once.
- Sessions are renewed before `session_lifetime` seconds (the API ends a session after 60 minutes), when
  the server says one expired, and when a pooled session turns out closed by the server while idle (the
  request never reached it); none of these spends a retry. A session on which anything went wrong is closed.
- Retried: `error` events of type server_error, rate limits (new responses wait until the exhausted limit of
  the last `rate_limits.updated` resets, at most `max_retry_after`), failed responses with a server error,
  dropped sockets, malformed events (not JSON, or not the shape of their type), undecodable, truncated or
  missing audio, timeouts. An `error` event of any other type is the request's fault: a counted failure with
  the server's message at once, which never counts toward declaring the endpoint down.
- Each response has `timeout` seconds (session opening included): nothing waits forever, and a timeout says
  what did not arrive.
- A response whose content came only under the beta protocol's event names stops the run (no retry finds
  anything else); beta events beside the GA ones are said once and ignored.

WebSockets through aiohttp, not the `openai` SDK's `client.realtime.connect`: bench/bench_realtime.py measures
both on the same exchange (32 in flight against the fake server in another process). The SDK parses every
server event into a pydantic model (each audio delta included) and reconnects on its own, hiding a dropped
socket from the retry count; aiohttp reads a frame and `json.loads` it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from audioeval.errors import ModelError
from audioeval.models.api.http import endpoint_url_and_headers
from audioeval.models.api.policy import EndpointPolicy, EndpointSettings, Outcome, Problem
from audioeval.models.api.realtime_session import Answer, BetaProtocol, RealtimeSession, SessionFailure
from audioeval.models.endpoint_stats import EndpointStats

log = logging.getLogger("audioeval")


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
        self.policy = EndpointPolicy(settings, stats, noun="responses")
        self.url, self.headers = realtime_url_and_headers(
            settings.api_key(), settings.base_url, settings.model, websocket_url
        )
        self.sessions_opened = 0
        self._idle: list[RealtimeSession] = []
        self._http: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._said_beta = False

    @property
    def down(self) -> str | None:
        return self.policy.down

    # --- sessions ----------------------------------------------------------------------------------------
    def _current_http(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop:
            import aiohttp

            self._http = aiohttp.ClientSession(trust_env=True)  # wss through HTTPS_PROXY as the SDK would
            self._loop, self._idle = loop, []
        return self._http

    async def _session(self, opening: list[RealtimeSession]) -> RealtimeSession:
        """An idle session young enough to finish a response, else a new one (put in `opening` as soon as its
        socket is open, so a timeout can say what it was waiting for)."""
        http = self._current_http()
        while self._idle:
            session = self._idle.pop()
            if not session.closed and session.age < self.session_lifetime:
                return session
            await session.close()  # renewed before the server ends it
        try:
            session = await RealtimeSession.connect(http, self.url, self.headers)
            opening.append(session)
            await session.configure(self.session_update)
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
    async def respond(self, create_event: str, audio_out: bool) -> Outcome[Answer]:
        """The answer to one `response.create` event (its JSON), under the endpoint policy. Raises EndpointDown
        when the endpoint failed too many responses in a row, ModelError when it rejects the key or the
        session, or answers in the beta protocol only."""
        return await self.policy.call(lambda: self._attempt(create_event, audio_out), self._classify)

    async def _attempt(self, create_event: str, audio_out: bool) -> Answer:
        import aiohttp

        opening: list[RealtimeSession] = []
        session: RealtimeSession | None = None
        try:
            async with asyncio.timeout(self.settings.timeout):
                session = await self._session(opening)
                answer = await session.respond(create_event, audio_out)
        except SessionFailure:
            await self._discard(session or (opening[0] if opening else None))
            raise
        except BetaProtocol as err:  # nothing readable came, and nothing will: the run stops, saying why
            await self._discard(session)
            raise ModelError(self._say_beta(err.events, stopped=True)) from None
        except TimeoutError:
            stuck = session or (opening[0] if opening else None)
            await self._discard(stuck)
            awaiting = stuck.awaiting if stuck is not None else "the WebSocket handshake"
            raise SessionFailure(
                "timeout",
                "timeout",
                f"no {awaiting} within {self.settings.timeout:g} s",
                retryable=True,
                overloaded=True,
            ) from None
        except (aiohttp.ClientError, ConnectionError) as err:
            await self._discard(session or (opening[0] if opening else None))
            raise SessionFailure(
                "connection", "connection failed", " ".join(str(err).split())[:200], retryable=True
            ) from None
        except BaseException:  # cancelled (Ctrl-C): the socket goes with the response it was reading
            await self._discard(session or (opening[0] if opening else None))
            raise
        self._note_rate_limit(session)
        self._idle.append(session)
        if answer.beta_events:
            self._say_beta(answer.beta_events, stopped=False)
        if answer.unknown_events:
            log.debug("%s: ignored events %s", self.settings.label, sorted(set(answer.unknown_events)))
        return answer

    async def _discard(self, session: RealtimeSession | None) -> None:
        """A session on which anything went wrong is closed, never reused."""
        if session is not None:
            self._note_rate_limit(session)
            await session.close()

    def _note_rate_limit(self, session: RealtimeSession) -> None:
        if session.rate_limit_wait:
            self.policy.pause(session.rate_limit_wait)
            session.rate_limit_wait = None

    @staticmethod
    def _classify(err: Exception) -> Problem | None:
        return None  # a SessionFailure carries its own Problem; anything else is not the endpoint's

    def _say_beta(self, events: list[str], stopped: bool) -> str:
        """The beta event names arrived: said once (a warning), or the run stops when they were all there was."""
        names = ", ".join(sorted(set(events))[:6])
        message = (
            f"{self.settings.label} sent events of the beta Realtime protocol ({names}), which this backend "
            "ignores: it reads the GA events (response.output_audio.delta, response.output_text.delta, ...)."
        )
        if stopped:
            return (
                f"{message} Its answers came only as beta events, so none could be read. Point base_url at an "
                "endpoint that speaks the GA Realtime protocol."
            )
        if not self._said_beta:
            self._said_beta = True
            log.warning("%s The GA events of the same responses were read.", message)
        return message
