"""A local OpenAI-compatible Chat Completions server for tests and benchmarks.

It listens on 127.0.0.1 only, answers `POST /v1/chat/completions` after an optional fixed delay, and can be
told to misbehave: rate-limit (429 with Retry-After), fail (500), hang past the client's timeout, or return
prose. Replies come from a `reply(request_json) -> str` function, so tests get deterministic verdicts.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Fault:
    """Misbehaviour for requests whose prompt text contains `match` (empty: every request)."""

    kind: str  # "429", "500", "hang", "disconnect"
    times: int = 1  # how many matching requests misbehave before the server answers normally
    match: str = ""
    retry_after: float | None = 0.05
    hang_seconds: float = 5.0


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


def echo_reply(body: dict[str, Any]) -> str:
    digest = hashlib.sha256(prompt_text(body).encode()).hexdigest()
    return f"reply {digest[:8]}"


@dataclass
class FakeOpenAIServer:
    reply: Callable[[dict[str, Any]], str] = echo_reply
    delay: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    port: int = 0  # 0: any free port; a fixed port keeps base_url (part of the cache identity) stable

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server was handling at once
        self._fault_counts: list[int] = [0] * len(self.faults)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._handle(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
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

    def _active_fault(self, text: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self.faults):
                if fault.match in text and self._fault_counts[i] < fault.times:
                    self._fault_counts[i] += 1
                    return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._answer(handler, body)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append({k.lower(): v for k, v in handler.headers.items()})
        text = prompt_text(body)
        fault = self._active_fault(text)
        if fault is not None:
            if fault.kind == "hang":
                time.sleep(fault.hang_seconds)
            elif fault.kind == "disconnect":
                handler.close_connection = True
                return
            else:
                status = int(fault.kind)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
                self._send(
                    handler, status, {"error": {"message": f"injected {status}", "type": "test"}}, headers
                )
                return
        if self.delay:
            time.sleep(self.delay)
        content = self.reply(body)
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        self._send(handler, 200, payload, {})

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], headers: dict[str, str]
    ) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
