"""The Realtime API server events the client reads, as typed shapes (pydantic).

An event is checked against the fields the client reads before any of them is used, so an event of a known
type with the wrong shape (`session: "weird"`, `rate: "fast"`, an `error` that is a string, `reset_seconds:
"soon"`, `response: "done!"`) is a malformed event: a counted failure with its reason, retried like a frame
that is not JSON, never a crash. Fields the client does not read are not checked (`extra="ignore"`), so
servers may add fields freely. The many delta events are checked by hand (one string field each) to keep the
per-delta cost at a dictionary lookup.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

RATE = 24000  # the GA `audio/pcm` format: 16-bit mono little-endian at 24 kHz, declared both ways


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class AudioFormat(_Shape):
    type: str | None = "audio/pcm"
    rate: int | None = RATE


class AudioSide(_Shape):
    format: AudioFormat | None = None


class SessionAudio(_Shape):
    input: AudioSide | None = None
    output: AudioSide | None = None


class Session(_Shape):
    audio: SessionAudio | None = None


class SessionEvent(_Shape):
    """`session.created`, `session.updated`."""

    session: Session = Session()


class ErrorBody(_Shape):
    type: str | None = None
    code: str | int | None = None
    message: str | None = None
    event_id: str | None = None  # the client event that caused it


class ErrorEvent(_Shape):
    error: ErrorBody


class RateLimit(_Shape):
    name: str | None = None
    remaining: float | None = None
    reset_seconds: float | None = None


class RateLimitsEvent(_Shape):
    rate_limits: list[RateLimit] = []


class StatusError(_Shape):
    type: str | None = None
    code: str | int | None = None
    message: str | None = None


class StatusDetails(_Shape):
    type: str | None = None
    reason: str | None = None
    error: StatusError | None = None


class ResponseBody(_Shape):
    id: str | None = None
    status: str = "completed"
    status_details: StatusDetails | None = None


class ResponseDoneEvent(_Shape):
    response: ResponseBody


class TranscriptDone(_Shape):
    transcript: str


class TextDone(_Shape):
    text: str


S = TypeVar("S", bound=_Shape)


class MalformedEvent(Exception):
    """An event whose fields are not what its type says they are."""


def read(shape: type[S], event: dict[str, Any]) -> S:
    """The event as `shape`; MalformedEvent naming the first field that does not fit."""
    try:
        return shape.model_validate(event)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "event"
        raise MalformedEvent(f"{event.get('type')}: {where}: {first['msg']}") from None


def delta_text(event: dict[str, Any]) -> str:
    """A delta event's `delta`: a string, else MalformedEvent."""
    delta = event.get("delta")
    if not isinstance(delta, str):
        raise MalformedEvent(f"{event.get('type')}: delta is {type(delta).__name__}, not a string")
    return delta


def exhausted_wait(event: RateLimitsEvent) -> float | None:
    """Seconds until the exhausted rate limits of a `rate_limits.updated` event reset; None when none is."""
    waits = [max(0.0, limit.reset_seconds or 0.0) for limit in event.rate_limits if limit.remaining == 0]
    return max(waits) if waits else None
