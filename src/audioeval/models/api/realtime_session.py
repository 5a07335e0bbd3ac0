"""One Realtime API session over a WebSocket (the GA event protocol): opened and configured once, then
answering one out-of-band response at a time.

A response's events are read until its `response.done`: audio deltas (base64 PCM16), their transcript, or
text deltas, each checked against its typed shape first (realtime_events.py). Whatever goes wrong is a
`SessionFailure`: a `Problem` for the endpoint policy saying whether a retry makes sense, whether it is an
overload signal, and whether it spends a retry (a session that reached its time limit does not: the request
is not at fault). Events the protocol may add later are listed and ignored, not failures; the beta protocol's
names for the GA events (`response.audio.delta`, ...) are listed apart, so the client can say they arrived.
An answer larger than the harness accepts (MAX_ANSWER_AUDIO_BYTES of audio, MAX_ANSWER_TEXT_CHARS of text) is
a counted failure, read no further.
"""

from __future__ import annotations

import binascii
import json
import time
from dataclasses import dataclass, field
from typing import Any

from audioeval.models.api import realtime_events as events
from audioeval.models.api.http import status_kind
from audioeval.models.api.policy import Problem, Rejected
from audioeval.models.api.realtime_events import RATE, MalformedEvent
from audioeval.types import FailureKind

__all__ = ["RATE", "Answer", "BetaProtocol", "RealtimeSession", "SessionFailure"]


def _fastest_b64decode() -> Any:
    """SIMD base64 (the `api` extra) for the audio deltas, else the standard library's (same bytes)."""
    try:
        import pybase64
    except ImportError:
        import base64

        return base64.b64decode
    return pybase64.b64decode


b64decode = _fastest_b64decode()
MAX_ANSWER_AUDIO_BYTES = 64 * 2**20  # PCM16 at 24 kHz: about 23 minutes
MAX_ANSWER_TEXT_CHARS = 4 * 2**20

# server events a response may carry that need nothing from the client
_QUIET_EVENTS = frozenset(
    {
        "session.updated",
        "response.created",
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
# the beta protocol's names of the GA events this client reads (GA: response.output_audio.delta, ...)
BETA_EVENTS = frozenset(
    {
        "response.audio.delta",
        "response.audio.done",
        "response.audio_transcript.delta",
        "response.audio_transcript.done",
        "response.text.delta",
        "response.text.done",
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
    beta_events: list[str] = field(default_factory=list)  # beta names of GA events, ignored


class BetaProtocol(Exception):
    """A response whose content came only as beta events: nothing the client reads arrived."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(sorted(set(names))))
        self.events = names


class SessionFailure(Rejected):
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
        super().__init__(Problem(kind, reason, detail, retryable, overloaded, retry_after, status, free))

    @property
    def reason(self) -> str:
        return self.problem.reason

    @property
    def detail(self) -> str:
        return self.problem.detail

    @property
    def status(self) -> int | None:
        return self.problem.status

    @property
    def retryable(self) -> bool:
        return self.problem.retryable


def error_failure(error: events.ErrorBody, rate_limit_wait: float | None) -> SessionFailure:
    """An `error` event as a failure: session expiry renews the session for free, rate limits and server
    errors are retried, anything else (the request was refused) is not."""
    kind, code = error.type or "error", str(error.code or "")
    message = " ".join((error.message or "").split())[:300]
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


def malformed(detail: str) -> SessionFailure:
    return SessionFailure("malformed", "malformed event", _short(detail), retryable=True)


class RealtimeSession:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.opened = time.monotonic()
        self.rate_limit_wait: float | None = None  # seconds until an exhausted rate limit resets, once seen
        self.answered = 0  # responses completed on this session
        self.awaiting = "session.created"  # what the session waits for from the server (said on a timeout)

    @property
    def age(self) -> float:
        return time.monotonic() - self.opened

    @property
    def closed(self) -> bool:
        return bool(self.ws.closed)

    @classmethod
    async def connect(cls, http: Any, url: str, headers: dict[str, str]) -> RealtimeSession:
        """The WebSocket handshake. Raises SessionFailure (with `status`) when the server refuses it."""
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
        return cls(ws)

    async def configure(self, update: dict[str, Any]) -> None:
        """Wait for `session.created`, send `session.update` and wait for `session.updated`. A server that
        refuses the session settings raises a SessionFailure that is not retryable, with its message. The
        caller closes the session when this raises."""
        await self._expect("session.created")
        await self.ws.send_str(json.dumps({"type": "session.update", "session": update}))
        self.awaiting = "session.updated"
        _check_formats(self._read(events.SessionEvent, await self._expect("session.updated")).session)
        self.awaiting = "response.create to send"

    async def _expect(self, kind: str) -> dict[str, Any]:
        while True:
            event = await self._next_event()
            if event["type"] == kind:
                return event
            if event["type"] == "error":
                failure = error_failure(self._read(events.ErrorEvent, event).error, None)
                raise SessionFailure(
                    failure.problem.kind,
                    "session refused",
                    f"{failure.reason}: {failure.detail}",
                    retryable=failure.retryable,
                )

    @staticmethod
    def _read(shape: type[events.S], event: dict[str, Any]) -> events.S:
        try:
            return events.read(shape, event)
        except MalformedEvent as err:
            raise malformed(str(err)) from None

    async def _next_event(self) -> dict[str, Any]:
        import aiohttp

        message = await self.ws.receive()
        if message.type is aiohttp.WSMsgType.TEXT:
            try:
                event = json.loads(message.data)
            except ValueError:
                raise malformed(message.data) from None
            if isinstance(event, dict) and isinstance(event.get("type"), str):
                return event
            raise malformed(message.data)
        if message.type is aiohttp.WSMsgType.BINARY:
            raise malformed(f"a binary frame of {len(message.data)} bytes")
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
        self.awaiting = "response.done"
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
                self.rate_limit_wait = events.exhausted_wait(self._read(events.RateLimitsEvent, event))
            elif kind == "error":
                raise error_failure(self._read(events.ErrorEvent, event).error, self.rate_limit_wait)
            elif kind == "response.done":
                answer = reader.done(self._read(events.ResponseDoneEvent, event).response)
                self.answered += 1
                self.awaiting = "response.create to send"
                return answer
            else:
                try:
                    reader.read(kind, event)
                except MalformedEvent as err:
                    raise malformed(str(err)) from None
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
        self.audio_bytes = 0
        self.transcript: list[str] = []
        self.final_transcript: str | None = None
        self.text: list[str] = []
        self.final_text: str | None = None
        self.text_chars = 0
        self.first_audio: float | None = None
        self.unknown: list[str] = []
        self.beta: list[str] = []

    def read(self, kind: str, event: dict[str, Any]) -> None:
        """One event of the response (MalformedEvent when its fields do not fit its type)."""
        if kind == "response.output_audio.delta":
            self._audio(events.delta_text(event))
        elif kind == "response.output_audio_transcript.delta":
            self.transcript.append(self._text(events.delta_text(event)))
        elif kind == "response.output_audio_transcript.done":
            self.final_transcript = events.read(events.TranscriptDone, event).transcript
        elif kind == "response.output_text.delta":
            self.text.append(self._text(events.delta_text(event)))
        elif kind == "response.output_text.done":
            self.final_text = events.read(events.TextDone, event).text
        elif kind in BETA_EVENTS:
            self.beta.append(kind)
        elif kind not in _QUIET_EVENTS:
            self.unknown.append(kind)

    def _audio(self, delta: str) -> None:
        try:
            chunk = b64decode(delta, validate=True)
        except (binascii.Error, ValueError):
            raise SessionFailure(
                "malformed", "undecodable audio", "an output_audio delta is not base64", retryable=True
            ) from None
        self.audio_bytes += len(chunk)
        if self.audio_bytes > MAX_ANSWER_AUDIO_BYTES:
            raise SessionFailure(
                "limit",
                "answer too large",
                f"more than {MAX_ANSWER_AUDIO_BYTES:,} bytes of audio (about "
                f"{MAX_ANSWER_AUDIO_BYTES / (2 * RATE) / 60:.0f} minutes); the rest was not read",
                retryable=False,
            )
        self.audio.append(chunk)
        if self.first_audio is None:
            self.first_audio = time.perf_counter()

    def _text(self, delta: str) -> str:
        self.text_chars += len(delta)
        if self.text_chars > MAX_ANSWER_TEXT_CHARS:
            raise SessionFailure(
                "limit",
                "answer too large",
                f"more than {MAX_ANSWER_TEXT_CHARS:,} characters of text; the rest was not read",
                retryable=False,
            )
        return delta

    def done(self, response: events.ResponseBody) -> Answer:
        status = response.status
        details = response.status_details or events.StatusDetails()
        if status in ("failed", "cancelled"):
            error = details.error or events.StatusError()
            why = str(error.code or error.type or details.reason or "no reason given")
            message = " ".join((error.message or "").split())[:300]
            retryable = status == "cancelled" or error.type == "server_error"
            raise SessionFailure(
                "server" if retryable else "refused",
                f"response {status}",
                f"{why}: {message}" if message else why,
                retryable=retryable,
            )
        audio = b"".join(self.audio)
        transcript = self.final_transcript if self.final_transcript is not None else "".join(self.transcript)
        text = self.final_text if self.final_text is not None else "".join(self.text)
        if self.beta and not (audio if self.audio_out else text):
            raise BetaProtocol(self.beta)  # the content came under the beta names only
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
        return Answer(
            text=transcript if self.audio_out else text,
            audio=audio,
            transcript=transcript if self.audio_out else None,
            first_audio_s=None if self.first_audio is None else self.first_audio - self.sent,
            generation_s=time.perf_counter() - self.sent,
            status=status,
            reason=details.reason if status != "completed" else None,
            unknown_events=self.unknown,
            beta_events=self.beta,
        )


def _check_formats(session: events.Session) -> None:
    """The audio formats the server says the session has must be the 24 kHz PCM the audio is resampled to."""
    audio = session.audio or events.SessionAudio()
    for side in ("input", "output"):
        fmt = (getattr(audio, side) or events.AudioSide()).format
        if fmt is not None and ((fmt.type or "audio/pcm") != "audio/pcm" or (fmt.rate or RATE) != RATE):
            raise SessionFailure(
                "refused",
                "session refused",
                f"the session's {side} audio is {fmt.model_dump()}, not 24 kHz PCM",
                retryable=False,
            )


def _short(text: Any, limit: int = 120) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
