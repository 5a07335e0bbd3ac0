"""Helpers shared by the ADU-Bench tests (imported by name; conftest.py holds the fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audioeval.testing.fake_openai import prompt_text

JUDGE_MARK = "meticulous evaluator"


def is_judge(body: dict[str, Any]) -> bool:
    return JUDGE_MARK in prompt_text(body)


def response_first(body: dict[str, Any]) -> bool:
    text = prompt_text(body)
    return text.index("[Assistant's response]") < text.index("[Reference answer]")


def judge_reply(ref_first: str = "7", resp_first: str = "9", model: str = "A fine answer."):
    """Judges give `ref_first` / `resp_first` depending on the order; the model answers `model`."""

    def reply(body: dict[str, Any]) -> str:
        if is_judge(body):
            return resp_first if response_first(body) else ref_first
        return model

    return reply


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows)
    )
    return path


class NotAChatServer:
    """A local endpoint answering every POST with HTTP 200 and a body that is not a chat completion."""

    def __init__(self, body: bytes, content_type: str = "text/html") -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> NotAChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
