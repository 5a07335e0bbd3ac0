"""A local Realtime API server (the GA WebSocket event protocol) for tests and benchmarks.

It listens on 127.0.0.1 only, at `ws://127.0.0.1:PORT/v1/realtime?model=NAME` (so `base_url` is
`http://127.0.0.1:PORT/v1`, as for the Chat Completions fake). A session starts with `session.created`; the
client's `session.update` must carry `session.type` (the GA shape: the beta shape without it is refused with
an `error` event, as OpenAI refuses it) and may declare only 24 kHz `audio/pcm`. Each `response.create` must
be out of band (`conversation: "none"`) with its own `input` items; its reply depends only on those items,
the instructions, the output modalities and the voice: a transcript and a tone sequence drawn from their
hash, streamed as `response.output_audio.delta` / `response.output_audio_transcript.delta` (or
`response.output_text.delta` for text output) over a delay spread in `latency` by the same hash, then
`response.done`. One response is active per session at a time, as on the real API.

Faults are asked for in the request text: `[fault:KIND*N]` makes the first N attempts of that request
misbehave (N defaults to 1), counted per request content, so a retry of the same request meets the next one:

    error       an `error` event of type server_error (retryable)
    invalid     an `error` event of type invalid_request_error (the request is at fault: not retryable)
    failed      `response.done` with status failed and a server_error in its status_details
    drop        the socket is cut (no close frame) after the first deltas
    malformed   a frame that is not JSON, mid-response
    unknown     an event of a type the protocol does not name, mid-response (the response then completes)
    truncated   audio deltas that add up to an odd number of bytes (not whole 16-bit samples)
    undecodable an audio delta that is not base64
    noaudio     audio was asked for, the response completes with a transcript and no audio
    expired     the `session_expired` error (the session's 60 minutes are up), then the socket closes
    ratelimit   `rate_limits.updated` with nothing remaining, then a `rate_limit_exceeded` error
    hang        `response.created`, then nothing
    closeidle   the response completes, then the server closes the session (as an idle timeout would)
    beta        the response's audio, transcript and text under the beta protocol's event names
                (`response.audio.delta`, `response.audio_transcript.delta`, `response.text.delta`, ...)
    betatoo     each audio delta twice: under its GA name and its beta name
    errortext   an `error` event whose `error` is a string
    resetsoon   `rate_limits.updated` with `reset_seconds: "soon"`
    limitsnumber `rate_limits.updated` with `rate_limits: 7`
    donetext    `response.done` with `response: "done!"`
    detailstext `response.done` whose `status_details` is `"oops"`

A session can misbehave too, before any request: `session_faults` lists one fault per session opened, in
order (the sessions after them behave): `nocreated` (the socket opens and nothing is ever sent),
`ratefast` (`session.updated` declares `rate: "fast"`), `sessionweird` (`session: "weird"`), `audiopcm`
(`audio: "pcm"`).

`api_key` set: a handshake without `Authorization: Bearer <api_key>` is refused with HTTP 401.
`max_session_s`: a `response.create` on a session older than that gets `session_expired` (as after 60 min).

    python -m audioeval.testing.fake_realtime --port 8765 --latency 0.2,1.0   # a server in its own process
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import hashlib
import json
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import numpy as np

RATE = 24000  # what the GA API's audio/pcm format is: 16-bit mono little-endian at 24 kHz
FAULT_MARK = re.compile(r"\[fault:([a-z]+)(?:\*(\d+))?\]")
FAULT_KINDS = (
    "error",
    "invalid",
    "failed",
    "drop",
    "malformed",
    "unknown",
    "truncated",
    "undecodable",
    "noaudio",
    "expired",
    "ratelimit",
    "hang",
    "closeidle",
    "beta",
    "betatoo",
    "errortext",
    "resetsoon",
    "limitsnumber",
    "donetext",
    "detailstext",
)
SESSION_FAULTS = ("nocreated", "ratefast", "sessionweird", "audiopcm")
# GA event name -> the beta protocol's name for it (the `beta` fault)
BETA_NAMES = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
}
_WORDS = "the a sound of tone low high bright soft voice answer is this one music speech bird rain".split()


def request_text(response: dict[str, Any]) -> str:
    """The text of a response request: instructions and every text part of its input items."""
    parts = [str(response.get("instructions") or "")]
    for item in response.get("input") or []:
        for content in item.get("content") or []:
            if content.get("type") in ("input_text", "output_text", "text"):
                parts.append(str(content.get("text") or ""))
    return "\n".join(parts)


def request_key(response: dict[str, Any], session: dict[str, Any]) -> str:
    """What the reply depends on: the input items (audio included), instructions, modalities, voice, limit."""
    identity = {
        "input": response.get("input"),
        "instructions": response.get("instructions"),
        "output_modalities": response.get("output_modalities") or session.get("output_modalities"),
        "voice": _voice(response, session),
        "max_output_tokens": response.get("max_output_tokens"),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _voice(response: dict[str, Any], session: dict[str, Any]) -> Any:
    for config in (response, session):
        voice = ((config.get("audio") or {}).get("output") or {}).get("voice")
        if voice:
            return voice
    return "alloy"


def reply_words(key: str) -> list[str]:
    """The transcript of a reply: 4-9 words and the key's first 8 hex digits, fixed by the key."""
    h = bytes.fromhex(key)
    n = 4 + h[0] % 6
    return [_WORDS[b % len(_WORDS)] for b in h[1 : 1 + n]] + [key[:8]]


def reply_audio(key: str, seconds: float) -> bytes:
    """PCM16 at 24 kHz: a tone per 0.1 s, frequencies drawn from the key."""
    h = hashlib.sha256(key.encode()).digest()
    n = max(1, int(seconds * RATE))
    t = np.arange(n) / RATE
    steps = (np.arange(n) // (RATE // 10)) % len(h)
    freqs = 200.0 + 10.0 * np.frombuffer(h, dtype=np.uint8)[steps]
    return (0.3 * np.sin(2 * np.pi * freqs * t) * 32767).astype("<i2").tobytes()


def spread(key: str, low: float, high: float, salt: str = "") -> float:
    u = int.from_bytes(hashlib.sha256((salt + key).encode()).digest()[:8], "big") / 2**64
    return low + (high - low) * u


def _faults(text: str) -> list[tuple[str, int]]:
    return [(kind, int(times or 1)) for kind, times in FAULT_MARK.findall(text) if kind in FAULT_KINDS]


class _Dropped(Exception):
    """The fault cut the socket: stop serving this connection."""


@dataclass
class FakeRealtimeServer:
    latency: tuple[float, float] = (
        0.0,
        0.0,
    )  # per-response delay spread over [low, high] by the request hash
    audio_seconds: tuple[float, float] = (0.4, 1.2)  # answer duration, spread by the request hash
    chunk_seconds: float = 0.2  # audio per delta
    api_key: str | None = None  # when set, other keys get HTTP 401 at the handshake
    max_session_s: float = 3600.0  # a session older than this answers response.create with session_expired
    port: int = 0
    keep_requests: bool = True  # False for benches: response.create events carry the audio
    requests: list[dict[str, Any]] = field(default_factory=list)  # response.create `response` objects
    handshakes: list[dict[str, str]] = field(default_factory=list)  # headers of each accepted connection
    session_faults: list[str] = field(
        default_factory=list
    )  # one per session opened, in order (SESSION_FAULTS)
    parallel: bool = False  # out-of-band responses run at once on one session (the API allows it)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.attempts: Counter[str] = Counter()  # response.create events per request key
        self.sessions = 0  # sessions opened (accepted handshakes)
        self.errors_sent: list[str] = []  # the code of each error event sent
        self.in_flight = 0
        self.max_in_flight = 0
        self.timings: list[tuple[float, float, float]] = []  # (arrival, done, delay) per completed response
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    # --- lifecycle ---------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeRealtimeServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from websockets.asyncio.server import serve

        self._loop = asyncio.get_running_loop()
        async with serve(
            self._connection, "127.0.0.1", self.port, process_request=self._handshake, max_size=None
        ) as server:
            self._server = server
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await server.wait_closed()

    def answered(self) -> int:
        """Responses completed so far."""
        with self._lock:
            return len(self.timings)

    # --- handshake and session ---------------------------------------------------------------------------
    def _handshake(self, connection: Any, request: Any) -> Any:
        if not request.path.split("?")[0].endswith("/realtime"):
            return connection.respond(HTTPStatus.NOT_FOUND, "not a Realtime endpoint\n")
        auth = request.headers.get("Authorization", "")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            body = json.dumps(
                {"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}}
            )
            return connection.respond(HTTPStatus.UNAUTHORIZED, body)
        with self._lock:
            self.sessions += 1
            self.handshakes.append({k.lower(): v for k, v in request.headers.raw_items()})
        return None

    async def _connection(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        opened = time.monotonic()
        session: dict[str, Any] = {
            "type": "realtime",
            "object": "realtime.session",
            "id": f"sess_{id(ws):x}",
            "output_modalities": ["audio"],
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": RATE}}, "output": {"voice": "alloy"}},
        }
        with self._lock:
            fault = self.session_faults.pop(0) if self.session_faults else None
        session["fault"] = fault
        tasks: set[asyncio.Task[None]] = set()
        try:
            if fault == "nocreated":
                await ws.wait_closed()
                return
            await self._send(
                ws, "session.created", session={k: v for k, v in session.items() if k != "fault"}
            )
            async for message in ws:
                if self.parallel and '"response.create"' in str(message)[:200]:
                    task = asyncio.get_running_loop().create_task(self._guarded(ws, message, session, opened))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                else:
                    await self._client_event(ws, message, session, opened)
        except (ConnectionClosed, _Dropped):
            return
        finally:
            for task in tasks:
                task.cancel()

    async def _guarded(self, ws: Any, message: Any, session: dict[str, Any], opened: float) -> None:
        """One response of several running on a session at once (`parallel`)."""
        from websockets.exceptions import ConnectionClosed

        try:
            await self._client_event(ws, message, session, opened)
        except (ConnectionClosed, _Dropped):
            return

    async def _client_event(self, ws: Any, message: Any, session: dict[str, Any], opened: float) -> None:
        try:
            event = json.loads(message)
            kind = event["type"]
        except (ValueError, KeyError, TypeError):
            await self._error(ws, "invalid_request_error", "invalid_json", "The event is not a JSON object.")
            return
        if kind == "session.update":
            await self._session_update(ws, event.get("session") or {}, session)
        elif kind == "response.create":
            if time.monotonic() - opened > self.max_session_s:
                await self._error(
                    ws, "invalid_request_error", "session_expired",
                    "Your session hit the maximum duration of 60 minutes.",
                )  # fmt: skip
                await ws.close()
                raise _Dropped
            await self._response(ws, event.get("response") or {}, session)
        else:
            await self._error(
                ws, "invalid_request_error", "unsupported_event",
                f"This test server takes session.update and out-of-band response.create only, not {kind!r}.",
            )  # fmt: skip

    async def _session_update(self, ws: Any, update: dict[str, Any], session: dict[str, Any]) -> None:
        if "type" not in update:  # the beta shape
            await self._error(
                ws, "invalid_request_error", "missing_required_parameter",
                "Missing required parameter: 'session.type'.", param="session.type",
            )  # fmt: skip
            return
        for side in ("input", "output"):
            fmt = ((update.get("audio") or {}).get(side) or {}).get("format")
            if fmt is not None and (fmt.get("type") != "audio/pcm" or fmt.get("rate", RATE) != RATE):
                await self._error(
                    ws, "invalid_request_error", "invalid_value",
                    f"This test server takes audio/pcm at {RATE} Hz only, got {fmt}.", param=f"audio.{side}.format",
                )  # fmt: skip
                return
        for key, value in update.items():
            if key == "audio":
                for side, config in value.items():
                    session["audio"].setdefault(side, {}).update(config or {})
            else:
                session[key] = value
        shown: Any = {k: v for k, v in session.items() if k != "fault"}
        fault = session.get("fault")
        if fault == "ratefast":
            shown = {
                **shown,
                "audio": {**shown["audio"], "output": {"format": {"type": "audio/pcm", "rate": "fast"}}},
            }
        elif fault == "sessionweird":
            shown = "weird"
        elif fault == "audiopcm":
            shown = {**shown, "audio": "pcm"}
        await self._send(ws, "session.updated", session=shown)

    # --- one response ------------------------------------------------------------------------------------
    async def _response(self, ws: Any, response: dict[str, Any], session: dict[str, Any]) -> None:
        arrival = time.perf_counter()
        if response.get("conversation") != "none" or not isinstance(response.get("input"), list):
            await self._error(
                ws, "invalid_request_error", "unsupported_value",
                "This test server answers out-of-band responses only: conversation 'none' with input items.",
            )  # fmt: skip
            return
        problem = _bad_audio(response["input"])
        if problem:
            await self._error(ws, "invalid_request_error", "invalid_audio", problem)
            return
        key = request_key(response, session)
        with self._lock:
            attempt = self.attempts[key]
            self.attempts[key] += 1
            if self.keep_requests:
                self.requests.append(response)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        fault = self._fault(request_text(response), attempt)
        try:
            delay = spread(key, *self.latency)
            if await self._stream(ws, response, session, key, delay, fault):
                with self._lock:
                    self.timings.append((arrival, time.perf_counter(), delay))
            if fault == "closeidle":
                await ws.close()
                raise _Dropped
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _fault(text: str, attempt: int) -> str | None:
        """The fault this attempt meets: the markers' budgets are used up in the order they are written."""
        used = 0
        for kind, times in _faults(text):
            if attempt < used + times:
                return kind
            used += times
        return None

    async def _stream(
        self,
        ws: Any,
        response: dict[str, Any],
        session: dict[str, Any],
        key: str,
        delay: float,
        fault: str | None,
    ) -> bool:
        """Send the response's events; True when it completed."""
        modalities = response.get("output_modalities") or session.get("output_modalities") or ["audio"]
        rid = f"resp_{key[:12]}"
        if fault in ("error", "invalid", "ratelimit", "errortext") and await self._early_fault(ws, fault):
            return False
        if fault == "expired":
            await self._error(
                ws,
                "invalid_request_error",
                "session_expired",
                "Your session hit the maximum duration of 60 minutes.",
            )
            await ws.close()
            raise _Dropped
        limits: Any = [{"name": "requests", "limit": 10000, "remaining": 9999, "reset_seconds": 0.006},
                       {"name": "tokens", "limit": 2000000, "remaining": 1990000, "reset_seconds": 0.3}]  # fmt: skip
        if fault == "resetsoon":
            limits[0]["reset_seconds"] = "soon"
        elif fault == "limitsnumber":
            limits = 7
        await self._send(ws, "rate_limits.updated", rate_limits=limits)
        base = {
            "id": rid,
            "object": "realtime.response",
            "conversation_id": None,
            "output_modalities": modalities,
        }
        base["metadata"] = response.get("metadata")
        await self._send(ws, "response.created", response={**base, "status": "in_progress", "output": []})
        if fault == "hang":
            await ws.wait_closed()
            raise _Dropped
        await asyncio.sleep(0.3 * delay)  # time to first audio
        words, status, reason = reply_words(key), "completed", None
        limit = response.get("max_output_tokens")
        if isinstance(limit, int) and limit < len(words):
            words, status, reason = words[:limit], "incomplete", "max_output_tokens"
        item = {"id": f"item_{key[:12]}", "type": "message", "role": "assistant", "object": "realtime.item"}
        where = {"response_id": rid, "item_id": item["id"], "output_index": 0, "content_index": 0}
        await self._send(ws, "response.output_item.added", response_id=rid, output_index=0,
                         item={**item, "status": "in_progress", "content": []})  # fmt: skip
        if "audio" in modalities:
            content = await self._audio(ws, key, words, where, 0.7 * delay, fault)
        else:
            content = await self._text(ws, words, where, 0.7 * delay, fault)
        done_item = {**item, "status": status, "content": [content]}
        await self._send(ws, "response.output_item.done", response_id=rid, output_index=0, item=done_item)
        details: dict[str, Any] | None = {"type": status, "reason": reason} if reason else None
        if fault == "failed":
            status = "failed"
            details = {"type": "failed", "error": {"type": "server_error", "code": "server_error",
                                                   "message": "The server had an error processing the response."}}  # fmt: skip
        usage = {"total_tokens": 10 + len(words), "input_tokens": 10, "output_tokens": len(words)}
        done: Any = {
            **base,
            "status": status,
            "status_details": details,
            "output": [done_item],
            "usage": usage,
        }
        if fault == "detailstext":
            done["status_details"] = "oops"
        elif fault == "donetext":
            done = "done!"
        await self._send(ws, "response.done", response=done)
        return status != "failed"

    async def _early_fault(self, ws: Any, fault: str) -> bool:
        if fault == "error":
            await self._error(ws, "server_error", "server_error", "The server had an error (injected).")
        elif fault == "errortext":
            await self._send(ws, "error", error="something broke (injected)")
        elif fault == "invalid":
            await self._error(
                ws, "invalid_request_error", "invalid_value", "The request was refused (injected)."
            )
        else:
            await self._send(
                ws, "rate_limits.updated",
                rate_limits=[{"name": "requests", "limit": 100, "remaining": 0, "reset_seconds": 0.2}],
            )  # fmt: skip
            await self._error(
                ws,
                "invalid_request_error",
                "rate_limit_exceeded",
                "Rate limit reached for requests (injected).",
            )
        return True

    async def _audio(
        self, ws: Any, key: str, words: list[str], where: dict[str, Any], seconds: float, fault: str | None
    ) -> dict[str, Any]:
        pcm = b"" if fault == "noaudio" else reply_audio(key, spread(key, *self.audio_seconds, salt="audio"))
        step = max(2, int(self.chunk_seconds * RATE) * 2)
        chunks = [pcm[i : i + step] for i in range(0, len(pcm), step)]
        if fault == "truncated" and chunks:
            chunks[-1] = chunks[-1][:-1]
        await self._send(ws, "response.content_part.added", **where, part={"type": "audio", "transcript": ""})
        rounds = max(len(chunks), len(words))
        for i in range(rounds):
            if i < len(words):
                await self._send(ws, _named("response.output_audio_transcript.delta", fault), **where,
                                 delta=(" " if i else "") + words[i])  # fmt: skip
            if i < len(chunks):
                data = base64.b64encode(chunks[i]).decode()
                if fault == "undecodable" and i == len(chunks) - 1:
                    data = data[:-3] + "!"
                await self._send(ws, _named("response.output_audio.delta", fault), **where, delta=data)
                if fault == "betatoo":
                    await self._send(ws, "response.audio.delta", **where, delta=data)
            await self._mid_fault(ws, fault, i)
            await asyncio.sleep(seconds / rounds)
        transcript = " ".join(words)
        await self._send(ws, _named("response.output_audio.done", fault), **where)
        await self._send(
            ws, _named("response.output_audio_transcript.done", fault), **where, transcript=transcript
        )
        part = {"type": "output_audio", "transcript": transcript}
        await self._send(ws, "response.content_part.done", **where, part=part)
        return part

    async def _text(
        self, ws: Any, words: list[str], where: dict[str, Any], seconds: float, fault: str | None
    ) -> dict[str, Any]:
        await self._send(ws, "response.content_part.added", **where, part={"type": "text", "text": ""})
        for i, word in enumerate(words):
            await self._send(
                ws, _named("response.output_text.delta", fault), **where, delta=(" " if i else "") + word
            )
            await self._mid_fault(ws, fault, i)
            await asyncio.sleep(seconds / len(words))
        text = " ".join(words)
        await self._send(ws, _named("response.output_text.done", fault), **where, text=text)
        part = {"type": "output_text", "text": text}
        await self._send(ws, "response.content_part.done", **where, part=part)
        return part

    async def _mid_fault(self, ws: Any, fault: str | None, i: int) -> None:
        if i != 1:
            return
        if fault == "drop":
            ws.transport.abort()  # no close frame: the socket is simply gone
            raise _Dropped
        if fault == "malformed":
            await ws.send('{"type": "response.output_audio.delta", "delta": ')
        if fault == "unknown":
            await self._send(ws, "response.sparkle.delta", delta="something new")

    # --- sending -----------------------------------------------------------------------------------------
    async def _send(self, ws: Any, kind: str, **fields: Any) -> None:
        event_id = f"event_{time.monotonic_ns():x}"
        await ws.send(json.dumps({"type": kind, "event_id": event_id, **fields}))

    async def _error(self, ws: Any, kind: str, code: str, message: str, param: str | None = None) -> None:
        with self._lock:
            self.errors_sent.append(code)
        error = {"type": kind, "code": code, "message": message, "param": param, "event_id": None}
        await self._send(ws, "error", error=error)


def _named(kind: str, fault: str | None) -> str:
    """The event's name: its beta protocol name under the `beta` fault."""
    return BETA_NAMES.get(kind, kind) if fault == "beta" else kind


def _bad_audio(items: list[Any]) -> str | None:
    """Why an input item's audio is not 24 kHz PCM16 in base64, or None when every one is."""
    for item in items:
        for content in (item or {}).get("content") or []:
            if content.get("type") != "input_audio":
                continue
            try:
                data = base64.b64decode(content.get("audio") or "", validate=True)
            except (binascii.Error, ValueError):
                return "Invalid input_audio: not base64."
            if len(data) % 2:
                return "Invalid input_audio: not whole 16-bit samples."
    return None


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes. A line `stats` on stdin prints the server's counters as JSON (sessions,
    response attempts, completed responses and their (arrival, done, delay) timings) and forgets the timings."""
    parser = argparse.ArgumentParser(
        prog="python -m audioeval.testing.fake_realtime", description=main.__doc__
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--latency", default="0.2,1.0", help="low,high seconds per response (default 0.2,1.0)"
    )
    parser.add_argument("--api_key", default=None, help="refuse other keys with HTTP 401")
    parser.add_argument(
        "--parallel", action="store_true", help="run several responses at once on one session"
    )
    args = parser.parse_args(argv)
    low, high = (float(x) for x in args.latency.split(","))
    with FakeRealtimeServer(
        latency=(low, high), port=args.port, api_key=args.api_key, keep_requests=False, parallel=args.parallel
    ) as server:
        print(json.dumps({"base_url": server.base_url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "stats":
                with server._lock:
                    taken, server.timings = server.timings, []
                    stats = {"sessions": server.sessions, "attempts": sum(server.attempts.values())}
                print(json.dumps({**stats, "timings": taken}), flush=True)


if __name__ == "__main__":
    main()
