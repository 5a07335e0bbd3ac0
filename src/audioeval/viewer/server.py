"""The local web server of `audioeval view`: the page, its assets, the data at /api/<path>, rebuilt audio at
/audio/<run>/<task>/<episode>/<sha256>.wav and report files at /files/<run>/<name>.

Every URL is parsed into names and numbers that are looked up in what the runs hold; no part of a URL is ever
joined onto a filesystem path, so nothing outside the run folders (and the viewer's own assets) is served.
"""

from __future__ import annotations

import errno
import json
import logging
import re
import sys
import threading
from functools import partial
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import unquote, urlsplit

from audioeval.errors import AudioEvalError, UsageError
from audioeval.viewer.site import Site

log = logging.getLogger("audioeval")

_CONTENT_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".wav": "audio/wav",
}
# The viewer's Content-Security-Policy: nothing but its own files (a report's remote image, a script in a
# forged record are never fetched). The server sends it as a header; a static export, opened from disk where
# there are no headers, carries it in its page as a <meta>, which cannot hold the header-only directives.
CSP_DIRECTIVES = (
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "media-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
)
_HEADER_ONLY = ("frame-ancestors", "report-uri", "sandbox")
_CSP = "; ".join(CSP_DIRECTIVES)
META_CSP = "; ".join(d for d in CSP_DIRECTIVES if not d.startswith(_HEADER_ONLY))
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_SHA = re.compile(r"^[0-9a-f]{64}$")
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def static_assets() -> dict[str, bytes]:
    """The viewer's own files (app.js, app.css), read once from the installed package."""
    folder = resources.files("audioeval.viewer") / "static"
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.is_file()}


def index_page(mode: str) -> bytes:
    from audioeval.viewer.overview import environment

    return environment().get_template("index.html").render(mode=mode, csp=META_CSP).encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    server_version = "audioeval-view"
    protocol_version = "HTTP/1.1"

    def __init__(self, *args: Any, app: ViewerApp, **kwargs: Any) -> None:
        self.app = app
        super().__init__(*args, **kwargs)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("view: " + format, *args)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(head=True)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(head=False)

    # ------------------------------------------------------------------------------------------------------
    def _answer(self, head: bool) -> None:
        if not self._host_allowed():
            self._send(HTTPStatus.FORBIDDEN, b"forbidden host\n", "text/plain; charset=utf-8", head)
            return
        segments = _segments(urlsplit(self.path).path)
        if segments is None:
            self._not_found(head)
            return
        try:
            found = self.app.route(segments)
        except Exception as err:  # noqa: BLE001 - one bad request must not stop the server
            self._failed(err, self.app.run_folder_of(segments), head)
            return
        if found is None:
            self._not_found(head)
            return
        body, content_type, cacheable = found
        self._send(HTTPStatus.OK, body, content_type, head, cacheable)

    def _failed(self, err: Exception, folder: str | None, head: bool) -> None:
        """A request that failed: one line in the terminal (a damaged file is named; the traceback only with
        --verbosity DEBUG) and the same line in the answer."""
        if isinstance(err, AudioEvalError):
            message = str(err)
        else:
            where = f"{folder}/results.json or its sample logs" if folder else "the run's files"
            message = f"{type(err).__name__}: {err}; {where} may be damaged"
        log.warning("view: %s failed: %s", self.path[:200], message)
        log.debug("view: traceback of %s", self.path[:200], exc_info=err)
        body = json.dumps({"error": message}).encode("utf-8")
        self._send(HTTPStatus.INTERNAL_SERVER_ERROR, body, "application/json; charset=utf-8", head)

    def handle(self) -> None:
        """A browser that goes away mid-answer (a closed tab, a skipped clip) is not an error of the server."""
        try:
            super().handle()
        except _GONE:
            self.close_connection = True

    def _host_allowed(self) -> bool:
        """On a loopback address, only pages from that address may call in (no DNS rebinding)."""
        if self.app.host not in _LOOPBACK:
            return True
        hosts = [(self.headers.get("Host") or "").strip()]
        authority = urlsplit(
            self.path
        ).netloc  # an absolute-form target (`GET http://host/...`) names one too
        if authority:
            hosts.append(authority)
        return all(_host_name(host) in _LOOPBACK for host in hosts)

    def _not_found(self, head: bool) -> None:
        self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)

    def _send(
        self, status: HTTPStatus, body: bytes, content_type: str, head: bool, cacheable: bool = False
    ) -> None:
        start, end = 0, len(body)
        wanted = self.headers.get("Range") if status == HTTPStatus.OK else None
        if wanted:
            parsed = _byte_range(wanted, len(body))
            if parsed is None:
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end = parsed
            status = HTTPStatus.PARTIAL_CONTENT
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        if status == HTTPStatus.PARTIAL_CONTENT:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(body)}")
        self.send_header("Cache-Control", "private, max-age=3600" if cacheable else "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if not head:
            self.wfile.write(body[start:end])


class ViewerApp:
    """What each URL answers: (body, content type, cacheable) or None."""

    def __init__(self, site: Site, host: str) -> None:
        self.site = site
        self.host = host
        self.assets = static_assets()
        self.index = index_page("server")

    def route(self, segments: list[str]) -> tuple[bytes, str, bool] | None:
        if not segments or segments == ["index.html"]:
            return self.index, "text/html; charset=utf-8", False
        head, rest = segments[0], segments[1:]
        if head == "static" and len(rest) == 1 and rest[0] in self.assets:
            return self.assets[rest[0]], _content_type(rest[0]), False
        if head == "api" and rest:
            payload = self.site.get("/".join(rest))
            if payload is None:
                return None
            body = json.dumps(payload, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
            return body, "application/json; charset=utf-8", False
        if head == "audio" and len(rest) == 4:
            return self._audio(*rest)
        if head == "files" and len(rest) == 2:
            return self._file(*rest)
        if head == "spoken" and len(rest) == 2:
            return self._spoken(*rest)
        return None

    def run_folder_of(self, segments: list[str]) -> str | None:
        """The run folder a URL is about (/api/run/<i>/..., /audio/<i>/..., /files/<i>/...), if any."""
        index = segments[2] if segments[:2] == ["api", "run"] and len(segments) > 2 else None
        if segments and segments[0] in ("audio", "files") and len(segments) > 1:
            index = segments[1]
        i = self._run(index) if index is not None else None
        return str(self.site.runs[i].path) if i is not None else None

    def _run(self, text: str) -> int | None:
        if not text.isdigit() or int(text) >= len(self.site.runs):
            return None
        return int(text)

    def _audio(self, run: str, task: str, episode: str, name: str) -> tuple[bytes, str, bool] | None:
        i, sha = self._run(run), name.removesuffix(".wav")
        if i is None or not episode.isdigit() or not name.endswith(".wav") or not _SHA.match(sha):
            return None
        if task not in self.site.runs[i].tasks or not self.site.runs[i].logged(task, int(episode)):
            return None  # only episodes the run logged are rebuilt: a made-up index costs nothing
        wav = self.site.audio[i].wav(task, int(episode), sha)
        return (wav, "audio/wav", True) if wav is not None else None

    def _spoken(self, run: str, name: str) -> tuple[bytes, str, bool] | None:
        """A spoken answer's audio from the run folder (content-addressed, so cacheable)."""
        i = self._run(run)
        path = self.site.runs[i].spoken_file(name.removesuffix(".wav")) if i is not None else None
        if path is None or not name.endswith(".wav"):
            return None
        return path.read_bytes(), "audio/wav", True

    def _file(self, run: str, name: str) -> tuple[bytes, str, bool] | None:
        i = self._run(run)
        path = self.site.runs[i].file(name) if i is not None else None
        if path is None:
            return None
        return path.read_bytes(), _content_type(name), False


def _host_name(host: str) -> str:
    """`name` of `name:port` (an IPv6 `[::1]:port` keeps its brackets)."""
    host = host.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0]


def _content_type(name: str) -> str:
    suffix = name[name.rfind(".") :].lower() if "." in name else ""
    return _CONTENT_TYPES.get(suffix, "application/octet-stream")


def _segments(path: str) -> list[str] | None:
    """The decoded path segments, or None when one of them could step out of where it points (`..`, `.`,
    an encoded slash or backslash, a NUL)."""
    out = []
    for raw in path.split("/"):
        if raw == "":
            continue
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            return None
        if segment in (".", "..") or any(c in segment for c in "/\\\x00"):
            return None
        out.append(segment)
    return out


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    match = _RANGE.match(header.strip())
    if not match or (not match[1] and not match[2]):
        return None
    if not match[1]:  # the last N bytes
        start, end = max(0, size - int(match[2])), size
    else:
        start = int(match[1])
        end = min(size, int(match[2]) + 1) if match[2] else size
    return (start, end) if start < end <= size else None


# what a client that disconnects leaves behind, on any platform
_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """socketserver prints a traceback for any error of a request; a client gone is not worth one."""
        if isinstance(sys.exc_info()[1], _GONE):
            return
        super().handle_error(request, client_address)


class ViewerServer:
    def __init__(self, site: Site, host: str, port: int) -> None:
        app = ViewerApp(site, host)
        try:
            self.httpd = _QuietServer((host, port), partial(Handler, app=app))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"--port {port}: port {port} on {host} is already in use. Stop what is using it, or pick "
                    "another port with --port (--port 0 picks a free one)."
                ) from err
            raise UsageError(
                f"--host {host} --port {port}: cannot listen there ({err.strerror or err})."
            ) from err
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.httpd.server_address[0])
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/"

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> ViewerServer:
        """Serve from a background thread (tests, notebooks)."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
        self.httpd.server_close()

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()
