"""A local OpenAI-compatible Chat Completions server for tests and benchmarks.

It listens on 127.0.0.1 only, answers `POST /v1/chat/completions` after an optional fixed delay, and can be
told to misbehave: rate-limit (429 with Retry-After), fail (500), hang past the client's timeout, or return
prose. Replies come from a `reply(request_json) -> str` function, so tests get deterministic verdicts.
Like OpenAI, it answers 400 when a request for a reasoning model (o1, o3, o4-mini, gpt-5...) carries
`max_tokens`, `top_p` or a temperature other than the default 1.
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
        refusal = reasoning_model_refusal(body)
        if refusal is not None:
            self._send(handler, 400, {"error": refusal}, {})
            return
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
