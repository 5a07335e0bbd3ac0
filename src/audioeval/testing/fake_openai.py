"""A local OpenAI-compatible Chat Completions server for tests and benchmarks.

It listens on 127.0.0.1 only, answers `POST /v1/chat/completions` after a delay (fixed, or spread over a
range per request: `latency=(0.2, 1.0)` gives each prompt its own delay, the same on every run), and can be
told to misbehave: rate-limit (429 with Retry-After), fail (500, 503, ...), hang past the client's timeout,
drop the connection, or answer 200 with a web page. Replies come from a `reply(request_json) -> str` function,
so tests get deterministic verdicts. `POST /v1/audio/transcriptions` (multipart, as `--asr openai` sends it)
is answered by `transcribe(wav_bytes, form_fields) -> str` when one is given (`transcription_faults` make it
misbehave the same way).

A request with `modalities: ["text", "audio"]` is answered in speech: a tone whose pitch and length depend
only on the reply text (so on the request), as OpenAI shapes it (`message.audio` with data in the asked
format, wav or pcm16, and the transcript; content null) or, with `audio_shape="vllm-omni"`, as vLLM-Omni does
(two choices: the text, then a 24 kHz WAV with an empty transcript). `hear_own_audio` is a perfect ASR of
that audio (the text it was made from), for `transcribe=`. Faults in AUDIO_FAULTS spoil the audio (no audio, not base64, a WAV shorter than its header, an MP3 header,
0 Hz or 4 GHz, no frames) or make it extreme (`full_scale`: -32768 and 32767 in it); `gzip_bomb` answers a
small gzip body that decompresses to many megabytes. `timings` records (arrival, reply, delay) per answered request, for
measuring throughput at the server. Like OpenAI, it answers 400 when a request for a reasoning model (o1, o3, o4-mini,
gpt-5...) carries `max_tokens`, `top_p` or a temperature other than the default 1.

    python -m audioeval.testing.fake_openai --latency 0.2,1.0   # a server for benches, in its own process
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# spoil an audio answer: no audio, not base64, a WAV cut short of what its header says, an MP3 header, a WAV
# declaring 0 Hz or 4,000,000,000 Hz, a WAV of no frames; `full_scale` is a valid answer whose first samples are
# -32768 and 32767 (the extremes of PCM16)
AUDIO_FAULTS = (
    "no_audio",
    "bad_audio",
    "truncated_audio",
    "unknown_audio",
    "zero_hz",
    "huge_hz",
    "zero_frames",
    "full_scale",
)


@dataclass
class Fault:
    """Misbehaviour for requests whose prompt text contains `match` (empty: every request)."""

    # "429", "500", "hang", "disconnect", "html" (200 with a web page instead of a completion), "gzip_bomb" (a
    # gzip reply of `bomb_mb` MB once decompressed); for audio answers one of AUDIO_FAULTS
    kind: str
    times: int = 1  # how many matching requests misbehave before the server answers normally
    match: str = ""
    retry_after: float | None = 0.05
    hang_seconds: float = 5.0
    after: int = 0  # the fault starts once the server has answered this many requests normally
    bomb_mb: float = 80.0  # gzip_bomb: the reply's size once decompressed (a completion of that much text)


def prompt_text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            for p in content or []:
                if p.get("type") == "text":
                    parts.append(p["text"])
                elif p.get("type") == "input_audio":
                    data = p["input_audio"]["data"]
                    parts.append(f"<audio {hashlib.sha256(data.encode()).hexdigest()[:12]}>")
    return "\n".join(parts)


def is_openai_reasoning_model(model: str) -> bool:
    return model.split("/")[-1].lower().startswith(("o1", "o3", "o4", "gpt-5"))


def reasoning_model_refusal(body: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 error for a field a reasoning model does not take, or None when the request is acceptable."""
    if not is_openai_reasoning_model(str(body.get("model", ""))):
        return None
    if "max_tokens" in body:
        return {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        }
    if "top_p" in body:
        return {
            "message": "Unsupported parameter: 'top_p' is not supported with this model.",
            "type": "invalid_request_error",
            "param": "top_p",
            "code": "unsupported_parameter",
        }
    if "temperature" in body and body["temperature"] != 1:
        return {
            "message": f"Unsupported value: 'temperature' does not support {body['temperature']} with this "
            "model. Only the default (1) value is supported.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "unsupported_value",
        }
    return None


def echo_reply(body: dict[str, Any]) -> str:
    digest = hashlib.sha256(prompt_text(body).encode()).hexdigest()
    return f"reply {digest[:8]}"


def spread_delay(text: str, low: float, high: float) -> float:
    """A delay in [low, high] drawn from the prompt's hash: the same prompt waits as long on every run."""
    u = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
    return low + (high - low) * u


class _Listener(ThreadingHTTPServer):
    request_queue_size = 1024  # a burst of new connections must not overflow the listen backlog
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up (cancelled) is normal
            super().handle_error(request, client_address)


@dataclass
class FakeOpenAIServer:
    reply: Callable[[dict[str, Any]], str] = echo_reply
    delay: float = 0.0
    latency: tuple[float, float] | None = None  # per-request delay spread over [low, high] (replaces delay)
    faults: list[Fault] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    keep_requests: bool = True  # False for benches: bodies with audio are large
    parse_bodies: bool = True  # False for benches: skip parsing (a remote server's CPU is not the client's);
    # the delay and the default reply then come from a CRC-32 of the raw body, and faults do not apply
    port: int = 0  # 0: any free port; a fixed port keeps base_url (part of the cache identity) stable
    transcribe: Callable[[bytes, dict[str, str]], str] | None = None  # answers /audio/transcriptions
    transcription_faults: list[Fault] = field(default_factory=list)
    transcriptions: list[dict[str, str]] = field(default_factory=list)  # the form fields of each one received
    audio_shape: str = "openai"  # how audio answers are shaped: "openai" or "vllm-omni"
    record_to: str | None = None  # a file each raw request body is appended to (8-byte length, then the body)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server was handling at once
        self.timings: list[tuple[float, float, float]] = []  # (arrival, reply, delay) per answered request
        self._fault_counts: list[int] = [0] * len(self.faults)
        self._said: dict[str, str] = {}  # sha256 of an audio answer's PCM -> the text it speaks
        self._recording: Any = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                arrival = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) or b"{}"
                if server.record_to is not None:
                    server._record(raw)
                if self.path.split("?")[0].rstrip("/").endswith("/audio/transcriptions"):
                    server._transcription(self, raw)
                    return
                if server.parse_bodies:
                    body = json.loads(raw)
                else:
                    # CRC-32, not SHA-256: a third of the CPU on a 1.4 MB body, and on a 2-core bench machine
                    # the server's CPU is taken from the client being measured
                    body = {"raw_digest": f"{zlib.crc32(raw):08x}"}
                server._handle(self, body, arrival)

        self.httpd = _Listener(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._recording is not None:
            self._recording.close()

    def _record(self, raw: bytes) -> None:
        with self._lock:
            if self._recording is None:
                assert self.record_to is not None
                self._recording = open(self.record_to, "ab")  # noqa: SIM115 - closed in __exit__
            self._recording.write(len(raw).to_bytes(8, "little") + raw)

    def _transcription(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        fields, files = parse_multipart(raw, handler.headers.get("Content-Type", ""))
        with self._lock:
            self.transcriptions.append(fields)
            fault = next((f for f in self.transcription_faults if f.times > 0), None)
            if fault is not None:
                fault.times -= 1
        if self.transcribe is None or "file" not in files:
            self._send(handler, 404 if self.transcribe is None else 400, {"error": {"message": "no"}}, {})
        elif fault is not None and fault.kind == "disconnect":
            handler.close_connection = True
        elif fault is not None:
            self._send(handler, int(fault.kind), {"error": {"message": f"injected {fault.kind}"}}, {})
        else:
            self._send(handler, 200, {"text": self.transcribe(files["file"], fields)}, {})

    def _active_fault(self, text: str) -> Fault | None:
        with self._lock:
            self._fault_counts += [0] * (len(self.faults) - len(self._fault_counts))  # faults added later
            for i, fault in enumerate(self.faults):
                if len(self.timings) < fault.after:
                    continue
                if fault.match in text and self._fault_counts[i] < fault.times:
                    self._fault_counts[i] += 1
                    return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], arrival: float) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._answer(handler, body, arrival)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], arrival: float) -> None:
        with self._lock:
            if self.keep_requests:
                self.requests.append(body)
                self.headers_seen.append({k.lower(): v for k, v in handler.headers.items()})
        refusal = reasoning_model_refusal(body)
        if refusal is not None:
            self._send(handler, 400, {"error": refusal}, {})
            return
        text = prompt_text(body) if self.parse_bodies else body["raw_digest"]
        fault = self._active_fault(text)
        if fault is not None and fault.kind not in AUDIO_FAULTS:
            if fault.kind == "hang":
                time.sleep(fault.hang_seconds)
            elif fault.kind == "disconnect":
                handler.close_connection = True
                return
            elif fault.kind == "html":
                self._send_raw(handler, 200, b"<html><body>502 Bad Gateway</body></html>", "text/html", {})
                return
            elif fault.kind == "gzip_bomb":
                self._send_raw(
                    handler, 200, gzip_bomb(fault.bomb_mb), "application/json", {"Content-Encoding": "gzip"}
                )
                return
            else:
                status = int(fault.kind)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                self._send(
                    handler, status, {"error": {"message": f"injected {status}", "type": "test"}}, headers
                )
                return
        delay = spread_delay(text, *self.latency) if self.latency else self.delay
        if delay:
            time.sleep(delay)
        content = self.reply(body)
        choices = [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ]
        if "audio" in (body.get("modalities") or []):
            choices = self._spoken_choices(body, content, fault)
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": choices,
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        self._send(handler, 200, payload, {})
        with self._lock:
            self.timings.append((arrival, time.perf_counter(), delay))

    def _spoken_choices(self, body: dict[str, Any], text: str, fault: Fault | None) -> list[dict[str, Any]]:
        """The choices of an answer in speech, in the server's shape (see the module docstring)."""
        pcm = speech_tone(text)
        with self._lock:
            self._said[hashlib.sha256(pcm).hexdigest()] = text
        asked = str((body.get("audio") or {}).get("format") or "wav")
        wav = wav_bytes(pcm, 24000)
        data = pcm if asked == "pcm16" and self.audio_shape == "openai" else wav
        kind = fault.kind if fault is not None else None
        if kind == "truncated_audio":
            data = wav[: len(wav) // 2]
        elif kind == "unknown_audio":
            data = b"ID3\x04\x00\x00\x00\x00\x00\x00" + pcm[:64]
        elif kind in ("zero_hz", "huge_hz"):
            data = wav_bytes(pcm, 0 if kind == "zero_hz" else 4_000_000_000)
        elif kind == "zero_frames":
            data = wav_bytes(b"", 24000)
        elif kind == "full_scale":
            pcm = struct.pack("<2h", -32768, 32767) + pcm[4:]
            with self._lock:
                self._said[hashlib.sha256(pcm).hexdigest()] = text
            data = pcm if asked == "pcm16" and self.audio_shape == "openai" else wav_bytes(pcm, 24000)
        encoded = "%%% not base64 %%%" if kind == "bad_audio" else base64.b64encode(data).decode("ascii")
        if self.audio_shape == "vllm-omni":
            spoken = {
                "role": "assistant",
                "content": None,
                "audio": {"id": "a1", "data": encoded, "transcript": ""},
            }
            choices = [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ]
            if kind != "no_audio":
                choices.append({"index": 1, "message": spoken, "finish_reason": "stop"})
            return choices
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if kind == "no_audio":
            message["content"] = text
        else:
            message["audio"] = {"id": "audio_test", "data": encoded, "expires_at": 0, "transcript": text}
        return [{"index": 0, "message": message, "finish_reason": "stop"}]

    def hear_own_audio(self, wav: bytes, fields: dict[str, str]) -> str:
        """A perfect ASR of this server's audio answers (for `transcribe=`); other audio is heard as ""."""
        pcm = wav[44:] if wav[:4] == b"RIFF" else wav
        with self._lock:
            return self._said.get(hashlib.sha256(pcm).hexdigest(), "")

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], headers: dict[str, str]
    ) -> None:
        FakeOpenAIServer._send_raw(handler, status, json.dumps(payload).encode(), "application/json", headers)

    @staticmethod
    def _send_raw(
        handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str, headers: dict[str, str]
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def speech_tone(text: str, rate: int = 24000) -> bytes:
    """16-bit PCM of a tone standing for `text`: its pitch from the text's hash, its length from its words."""
    digest = hashlib.sha256(text.encode()).digest()
    n = int(rate * (0.3 + 0.05 * len(text.split())))
    t = [i / rate for i in range(n)]
    freq = 200.0 + 10.0 * (digest[0] % 50)
    return struct.pack(f"<{n}h", *(int(8000 * math.sin(2 * math.pi * freq * x)) for x in t))


def gzip_bomb(megabytes: float) -> bytes:
    """A gzip body that decompresses to a chat completion of `megabytes` MB of text (about 1/1000 the size)."""
    filler = b"a" * 2**20
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    parts = [packer.compress(b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "')]
    parts += [packer.compress(filler) for _ in range(int(megabytes))]
    parts.append(packer.compress(b'"}, "finish_reason": "stop"}]}') + packer.flush())
    return b"".join(parts)


def wav_bytes(pcm: bytes, rate: int) -> bytes:
    header = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE"
    # the byte rate wraps at 2^32, as a careless writer's would: the header still says `rate`
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, (rate * 2) % 2**32, 2, 16)
    return header + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm


def parse_multipart(raw: bytes, content_type: str) -> tuple[dict[str, str], dict[str, bytes]]:
    """(text fields, file fields) of a multipart/form-data body."""
    boundary = content_type.partition("boundary=")[2].strip('"')
    fields: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for part in raw.split(b"--" + boundary.encode())[1:]:
        head, _, body = part.partition(b"\r\n\r\n")
        if not body:
            continue
        body = body[:-2] if body.endswith(b"\r\n") else body
        disposition = next(
            (h for h in head.decode().split("\r\n") if h.lower().startswith("content-disposition")), ""
        )
        name = disposition.partition('name="')[2].partition('"')[0]
        if "filename=" in disposition:
            files[name] = body
        else:
            fields[name] = body.decode()
    return fields, files


def throughput(timings: list[tuple[float, float, float]], concurrency: int) -> dict[str, float]:
    """Achieved and ideal throughput over the answered requests: achieved = requests / (last reply - first
    arrival); ideal = concurrency / mean delay (every slot busy all the time)."""
    n = len(timings)
    span = max(t[1] for t in timings) - min(t[0] for t in timings)
    mean_delay = sum(t[2] for t in timings) / n
    achieved, ideal = n / span, concurrency / mean_delay
    return {
        "requests": n,
        "span_s": round(span, 3),
        "mean_delay_s": round(mean_delay, 4),
        "achieved_per_s": round(achieved, 3),
        "ideal_per_s": round(ideal, 3),
        "ratio": round(achieved / ideal, 4),
    }


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes. Each line `timings` on stdin prints the (arrival, reply, delay) triples
    recorded since the last such line as JSON and forgets them."""
    parser = argparse.ArgumentParser(prog="python -m audioeval.testing.fake_openai", description=main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", default="0.2,1.0", help="low,high seconds (default 0.2,1.0)")
    parser.add_argument(
        "--reply", help="answer every request with this text (default: a hash of the request body)"
    )
    parser.add_argument(
        "--record", help="append each request body to this file (8-byte length, then the body)"
    )
    args = parser.parse_args(argv)
    low, high = (float(x) for x in args.latency.split(","))
    if args.reply is None:
        reply = lambda body: f"reply {body['raw_digest']}"  # noqa: E731
    else:
        reply = lambda body: args.reply  # noqa: E731
    with FakeOpenAIServer(
        reply=reply,
        latency=(low, high),
        keep_requests=False,
        parse_bodies=False,
        port=args.port,
        record_to=args.record,
    ) as server:
        print(json.dumps({"base_url": server.base_url}), flush=True)
        for line in sys.stdin:
            if line.strip() == "timings":
                with server._lock:
                    taken, server.timings = server.timings, []
                    if server._recording is not None:
                        server._recording.flush()
                print(json.dumps(taken), flush=True)


if __name__ == "__main__":
    main()
