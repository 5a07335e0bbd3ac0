"""Helpers shared by the viewer tests (imported by name; conftest.py holds the fixtures)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from audioeval.viewer.run_folder import RunFolder
from audioeval.viewer.server import ViewerServer
from audioeval.viewer.site import ServerLinks, Site


def site_of(*run_dirs: Path, trust_builder_files: bool = True) -> Site:
    """The viewer's site for run folders; the tests made these runs, so their builder files are trusted."""
    return Site([RunFolder.open(p) for p in run_dirs], ServerLinks(), trust_builder_files)


def serve(*run_dirs: Path, trust_builder_files: bool = True) -> ViewerServer:
    """A viewer server on a free port (use as a context manager)."""
    return ViewerServer(site_of(*run_dirs, trust_builder_files=trust_builder_files), "127.0.0.1", 0)


def get(server: ViewerServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
    """One GET with the path sent exactly as given (no normalisation of `..` or escapes)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", (headers or {}).get("Host", f"127.0.0.1:{server.port}"))
        for key, value in (headers or {}).items():
            if key != "Host":
                conn.putheader(key, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def api(server: ViewerServer, path: str) -> Any:
    status, _, body = get(server, "/api/" + path)
    assert status == 200, (path, status, body[:200])
    return json.loads(body)


def audio_parts(detail: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"]


def logged_audio(run_dir: Path, task: str, index: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A sample record of the run's log and its audio parts as logged."""
    line = (run_dir / f"samples_{task}.jsonl").read_text().splitlines()[index]
    record = json.loads(line)
    return record, [p for m in record["messages"] for p in m["content"] if p["type"] == "audio"]
