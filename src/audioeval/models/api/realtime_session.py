"""One Realtime API session over a WebSocket (the GA event protocol): opened and configured once, then
answering one out-of-band response at a time (the API allows one active response per conversation).

A response's events are read until its `response.done`: audio deltas (base64 PCM16), their transcript, or
text deltas. Whatever goes wrong is a `SessionFailure` saying whether a retry makes sense, whether it is an
overload signal, and whether it spends a retry (a session that reached its time limit does not: the request
is not at fault). Events the protocol may add later are counted and ignored, not failures.
"""

from __future__ import annotations

import binascii
import json
import time
from dataclasses import dataclass, field
from typing import Any

from audioeval.models.api.client import status_kind
from audioeval.types import FailureKind


def _fastest_b64decode() -> Any:
    """SIMD base64 (the `api` extra) for the audio deltas, else the standard library's (same bytes)."""
    try:
        import pybase64
    except ImportError:
        import base64

        return base64.b64decode
    return pybase64.b64decode


b64decode = _fastest_b64decode()
RATE = 24000  # the GA `audio/pcm` format: 16-bit mono little-endian at 24 kHz, declared both ways

# server events a response may carry that need nothing from the client
_QUIET_EVENTS = frozenset(
    {
        "session.updated",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_audio.done",
        "response.output_text.done",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.created",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
    }
)


@dataclass
class Answer:
    """What one response said."""

    text: str  # the text output, or the transcript of the audio output
    audio: bytes  # PCM16 at RATE; empty for text output
    transcript: str | None  # the model's own transcript of its audio (None for text output)
    first_audio_s: float | None  # response.create sent -> first audio delta
    generation_s: float  # response.create sent -> response.done
    status: str  # completed, or incomplete (cut at max_output_tokens, content filter)
    reason: str | None = None  # why incomplete
    unknown_events: list[str] = field(default_factory=list)  # event types the protocol did not name, ignored


class SessionFailure(Exception):
    """An attempt that did not give an answer; the session it happened on is not used again."""

    def __init__(
        self,
        kind: FailureKind,
        reason: str,
        detail: str,
        *,
        retryable: bool,
        overloaded: bool = False,
        retry_after: float | None = None,
        free: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(f"{reason}: {detail}")
        self.kind = kind  # the Failure kind a response failed this way gets
        self.reason = reason  # short: "error server_error", "connection dropped", "malformed event", ...
        self.detail = detail
        self.retryable = retryable
        self.overloaded = overloaded  # lowers the concurrency limit (rate limits, timeouts)
        self.retry_after = retry_after
        self.free = free  # the retry spends no attempt (the session hit its time limit)
        self.status = status  # the HTTP status of a refused handshake


def error_failure(error: dict[str, Any], rate_limit_wait: float | None) -> SessionFailure:
    """An `error` event as a failure: session expiry renews the session for free, rate limits and server
    errors are retried, anything else (the request was refused) is not."""
    kind, code = str(error.get("type") or "error"), str(error.get("code") or "")
    message = " ".join(str(error.get("message") or "").split())[:300]
    reason = f"error {code or kind}"
    if code == "session_expired" or "maximum duration" in message:
        return SessionFailure("server", reason, message, retryable=True, free=True)
    if "rate_limit" in code or "rate_limit" in kind:
        return SessionFailure(
            "rate_limited", reason, message, retryable=True, overloaded=True, retry_after=rate_limit_wait
        )
    if kind == "server_error":
        return SessionFailure("server", reason, message, retryable=True)
    return SessionFailure("refused", reason, message, retryable=False)


class RealtimeSession:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.opened = time.monotonic()
        self.rate_limit_wait: float | None = None  # seconds until an exhausted rate limit resets, once seen
        self.answered = 0  # responses completed on this session

    @property
    def age(self) -> float:
        return time.monotonic() - self.opened

    @property
    def closed(self) -> bool:
        return bool(self.ws.closed)

    @classmethod
    async def open(
        cls, http: Any, url: str, headers: dict[str, str], update: dict[str, Any]
    ) -> RealtimeSession:
        """Connect, wait for `session.created`, send `session.update` and wait for `session.updated`. Raises
        SessionFailure (with `status` for a refused handshake); a server that refuses the session settings
        raises one that is not retryable, with its message."""
        import aiohttp

        try:
            ws = await http.ws_connect(url, headers=headers, max_msg_size=64 * 2**20, autoping=True)
        except aiohttp.WSServerHandshakeError as err:
            status = int(err.status)
            raise SessionFailure(
                status_kind(status),
                f"handshake HTTP {status}",
                " ".join(str(err.message).split())[:200],
                retryable=status in (408, 409, 429) or status >= 500,
                overloaded=status in (429, 503),
                status=status,
            ) from err
        session = cls(ws)
        try:
            await session._expect("session.created")
            await ws.send_str(json.dumps({"type": "session.update", "session": update}))
            _check_formats((await session._expect("session.updated")).get("session") or {})
        except BaseException:
            await session.close()
            raise
        return session

    async def _expect(self, kind: str) -> dict[str, Any]:
        while True:
            event = await self._next_event()
            if event["type"] == kind:
                return event
            if event["type"] == "error":
                failure = error_failure(event.get("error") or {}, None)
                raise SessionFailure(
                    failure.kind,
                    "session refused",
                    f"{failure.reason}: {failure.detail}",
                    retryable=failure.retryable,
                )

    async def _next_event(self) -> dict[str, Any]:
        import aiohttp

        message = await self.ws.receive()
        if message.type is aiohttp.WSMsgType.TEXT:
            try:
                event = json.loads(message.data)
            except ValueError:
                raise SessionFailure(
                    "malformed", "malformed event", _short(message.data), retryable=True
                ) from None
            if isinstance(event, dict) and isinstance(event.get("type"), str):
                return event
            raise SessionFailure("malformed", "malformed event", _short(message.data), retryable=True)
        if message.type is aiohttp.WSMsgType.BINARY:
            raise SessionFailure(
                "malformed", "malformed event", f"a binary frame of {len(message.data)} bytes", retryable=True
            )
        code = self.ws.close_code
        raise SessionFailure(
            "connection",
            "connection dropped",
            f"the socket closed mid-response ({message.type.name.lower()}{f', code {code}' if code else ''})",
            retryable=True,
        )

    async def respond(self, create_event: str, audio_out: bool) -> Answer:
        """Send one `response.create` and read its events until `response.done`."""
        sent = time.perf_counter()
        reader = _ResponseReader(sent, audio_out)
        try:
            await self.ws.send_str(create_event)
            event = await self._next_event()
        except (SessionFailure, ConnectionError) as err:
            if self.answered and (isinstance(err, ConnectionError) or err.reason == "connection dropped"):
                # a pooled session the server closed while it sat idle: the request never reached it
                raise SessionFailure(
                    "connection",
                    "idle session closed",
                    "the server closed a pooled session",
                    retryable=True,
                    free=True,
                ) from None
            raise
        while True:
            kind = event["type"]
            if kind == "rate_limits.updated":
                self.rate_limit_wait = _exhausted_wait(event)
            elif kind == "error":
                raise error_failure(event.get("error") or {}, self.rate_limit_wait)
            elif kind == "response.done":
                answer = reader.done(event.get("response") or {})
                self.answered += 1
                return answer
            else:
                reader.read(kind, event)
            event = await self._next_event()

    async def close(self) -> None:
        try:
            await self.ws.close()
        except Exception:  # noqa: S110 - a socket that is already gone needs no closing
            pass


class _ResponseReader:
    """Collects one response's deltas."""

    def __init__(self, sent: float, audio_out: bool) -> None:
        self.sent = sent
        self.audio_out = audio_out
        self.audio: list[bytes] = []
        self.transcript: list[str] = []
        self.final_transcript: str | None = None
        self.text: list[str] = []
        self.final_text: str | None = None
        self.first_audio: float | None = None
        self.unknown: list[str] = []

    def read(self, kind: str, event: dict[str, Any]) -> None:
        if kind == "response.output_audio.delta":
            try:
                self.audio.append(b64decode(str(event.get("delta") or ""), validate=True))
            except (binascii.Error, ValueError):
                raise SessionFailure(
                    "malformed", "undecodable audio", "an output_audio delta is not base64", retryable=True
                ) from None
            if self.first_audio is None:
                self.first_audio = time.perf_counter()
        elif kind == "response.output_audio_transcript.delta":
            self.transcript.append(str(event.get("delta") or ""))
        elif kind == "response.output_audio_transcript.done":
            self.final_transcript = str(event.get("transcript") or "")
        elif kind == "response.output_text.delta":
            self.text.append(str(event.get("delta") or ""))
        elif kind == "response.output_text.done":
            self.final_text = str(event.get("text") or "")
        elif kind not in _QUIET_EVENTS and kind != "response.created":
            self.unknown.append(kind)

    def done(self, response: dict[str, Any]) -> Answer:
        status = str(response.get("status") or "completed")
        details = response.get("status_details") or {}
        if status in ("failed", "cancelled"):
            error = details.get("error") or {}
            why = error.get("code") or error.get("type") or details.get("reason") or "no reason given"
            message = " ".join(str(error.get("message") or "").split())[:300]
            retryable = status == "cancelled" or error.get("type") == "server_error"
            raise SessionFailure(
                "server" if retryable else "refused",
                f"response {status}",
                f"{why}: {message}" if message else why,
                retryable=retryable,
            )
        audio = b"".join(self.audio)
        transcript = self.final_transcript if self.final_transcript is not None else "".join(self.transcript)
        if self.audio_out and not audio:
            raise SessionFailure(
                "malformed",
                "no audio",
                "audio output was asked for and the response carried none",
                retryable=True,
            )
        if len(audio) % 2:
            raise SessionFailure(
                "malformed",
                "truncated audio",
                f"{len(audio)} bytes are not whole 16-bit samples",
                retryable=True,
            )
        text = self.final_text if self.final_text is not None else "".join(self.text)
        return Answer(
            text=transcript if self.audio_out else text,
            audio=audio,
            transcript=transcript if self.audio_out else None,
            first_audio_s=None if self.first_audio is None else self.first_audio - self.sent,
            generation_s=time.perf_counter() - self.sent,
            status=status,
            reason=details.get("reason") if status != "completed" else None,
            unknown_events=self.unknown,
        )


def _check_formats(session: dict[str, Any]) -> None:
    """The audio formats the server says the session has must be the 24 kHz PCM the audio is resampled to."""
    audio = session.get("audio") or {}
    for side in ("input", "output"):
        fmt = (audio.get(side) or {}).get("format") or {}
        if fmt and (fmt.get("type", "audio/pcm") != "audio/pcm" or int(fmt.get("rate") or RATE) != RATE):
            raise SessionFailure(
                "refused",
                "session refused",
                f"the session's {side} audio is {fmt}, not 24 kHz PCM",
                retryable=False,
            )


def _exhausted_wait(event: dict[str, Any]) -> float | None:
    """Seconds until the exhausted rate limits of a `rate_limits.updated` event reset; None when none is."""
    waits = [
        float(limit.get("reset_seconds") or 0.0)
        for limit in event.get("rate_limits") or []
        if isinstance(limit, dict) and limit.get("remaining") == 0
    ]
    return max(waits) if waits else None


def _short(text: Any, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
