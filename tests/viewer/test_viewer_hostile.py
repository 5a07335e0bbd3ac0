"""`audioeval view` against a hostile or careless user: paths that try to step out, links that lead out, huge
and garbage requests, damaged or forged run files, clients that go away mid-answer, exports onto the wrong
folder. Each ends in a 404, one clear line naming the file (and line) at fault, or a correct page; never a
traceback in the terminal, never a file from outside the run folder, never a fetch from another host (the
server's Content-Security-Policy, carried by an export's page as a <meta>)."""

from __future__ import annotations

import http.client
import http.server
import json
import logging
import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from viewer_helpers import api, audio_parts, get, serve

from audioeval.viewer.server import Handler, ViewerServer
from tests.conftest import run_cli
from tests.support.browser import headless_chromium, unavailable_reason


def _copy(run: Path, tmp_path: Path, name: str = "run") -> Path:
    target = tmp_path / name
    shutil.copytree(run, target)
    return target


def _edit_record(run: Path, change, line: int = 0, task: str = "toy_tones") -> Path:
    path = run / f"samples_{task}.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[line])
    change(record)
    lines[line] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


def _edit_results(run: Path, **fields) -> Path:
    path = run / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))
    return path


class _Lines(logging.Handler):
    """The audioeval log as the terminal would show it, exceptions included."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def terminal():
    handler = _Lines()
    logger = logging.getLogger("audioeval")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


# --- paths ---------------------------------------------------------------------------------------------------

MORE_TRAVERSALS = [
    "/files/0/%252e%252e%252fresults.json",  # encoded twice
    "/files/0/..%c0%afresults.json",  # overlong UTF-8 slash
    "/files/0/%2e%2e%5c%2e%2e%5cetc%5cpasswd",
    "/api/run/0/sample/%2e%2e/0/0",
    "/api/run/0/sample/toy_tones/0/0/../../../../../etc/passwd",
    "/audio/0/%2Fetc%2Fpasswd/0/" + "0" * 64 + ".wav",
    "/files/0/" + "%2e%2e%2f" * 40 + "etc/passwd",
    "/static/%2Fetc%2Fpasswd",
    "http://evil.example/files/0/results.json",
]


@pytest.mark.parametrize("path", MORE_TRAVERSALS)
def test_encoded_and_absolute_paths_are_not_found(toy_runs, path):
    with serve(toy_runs[0]) as server:
        status, _, body = get(server, path)
    assert status in (400, 403, 404), (path, status)
    assert b"root:" not in body and b'"seed"' not in body


def test_a_sample_log_linking_out_of_the_run_folder_is_refused(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    outside = tmp_path / "someone_elses.jsonl"
    shutil.copy(run / "samples_toy_tones.jsonl", outside)
    (run / "samples_toy_tones.jsonl").unlink()
    os.symlink(outside, run / "samples_toy_tones.jsonl")
    code, _, err = run_cli(["view", str(run), "--port", "0"])
    assert code == 2
    assert f"{run / 'samples_toy_tones.jsonl'}: a link leading out of the run folder" in err
    assert "Traceback" not in err


def test_results_json_linking_out_of_the_run_folder_is_refused(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    outside = tmp_path / "results_elsewhere.json"
    shutil.move(run / "results.json", outside)
    os.symlink(outside, run / "results.json")
    code, _, err = run_cli(["view", str(run), "--export", str(tmp_path / "site")])
    assert code == 2 and "results.json: a link leading out of the run folder" in err
    assert not (tmp_path / "site").exists()


def test_a_report_file_linking_out_is_not_served(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    (tmp_path / "secret.md").write_text("SECRET")
    os.symlink(tmp_path / "secret.md", run / "notes.md")
    with serve(run) as server:
        status, _, body = get(server, "/files/0/notes.md")
    assert status == 404 and b"SECRET" not in body


# --- requests ------------------------------------------------------------------------------------------------


def test_a_huge_request_line_is_refused_and_the_server_keeps_serving(toy_runs):
    with serve(toy_runs[0]) as server:
        status, _, _ = get(server, "/api/runs?" + "x" * 70_000)
        assert status == 414
        assert get(server, "/api/runs")[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs?%ff%fe=%00&&&==&x=" + "%" * 50,
        "/api/run/0/samples?limit=-1&offset=99999999999999999999&sort=<script>",
        "/?" + "a=b&" * 2000,
    ],
)
def test_garbage_query_parameters_change_nothing(toy_runs, path):
    with serve(toy_runs[0]) as server:
        status, _, body = get(server, path)
        plain = get(server, path.split("?")[0])
    assert status == 200 and body == plain[2]


@pytest.mark.parametrize(
    "path",
    [
        "/api/run/99999999999999999999999/samples",
        "/api/run/0/sample/toy_tones/99999999999999999999999/0",
        "/api/run/0/sample/toy_tones/0/99999999999999999999999",
        "/files/99999999999999999999999/results.json",
        "/api/run/0/sample/" + "t" * 5000 + "/0/0",
    ],
)
def test_huge_numbers_and_names_are_not_found(toy_runs, path):
    with serve(toy_runs[0]) as server:
        assert get(server, path)[0] == 404


def test_audio_of_an_episode_the_run_did_not_log_is_never_rebuilt(toy_runs, monkeypatch):
    with serve(toy_runs[0]) as server:
        app_site = server.httpd.RequestHandlerClass.keywords["app"].site  # type: ignore[attr-defined]
        monkeypatch.setattr(
            app_site.audio[0], "episode", lambda *a: pytest.fail("an unlogged episode was rebuilt")
        )
        status, _, _ = get(server, "/audio/0/toy_tones/123456789012345678901234567890/" + "0" * 64 + ".wav")
    assert status == 404


# --- damaged or forged files ---------------------------------------------------------------------------------

DAMAGED_RECORDS = {
    "messages is a number": (lambda r: r.__setitem__("messages", 7), "`messages` is a number, not a list"),
    "a message is a number": (lambda r: r.__setitem__("messages", [1]), "`messages[0]` is a number"),
    "content is a number": (
        lambda r: r["messages"][0].__setitem__("content", 7),
        "`messages[0].content` is a number",
    ),
    "a part is a string": (
        lambda r: r["messages"][0].__setitem__("content", ["x"]),
        "`messages[0].content[0]` is a string",
    ),
    "scores is a number": (lambda r: r.__setitem__("scores", 7), "`scores` is a number, not an object"),
    "judgments is a list": (lambda r: r.__setitem__("judgments", [1]), "`judgments` is a list"),
}


@pytest.mark.parametrize("name", list(DAMAGED_RECORDS))
def test_a_damaged_sample_line_is_named_with_file_and_line(toy_runs, tmp_path, name):
    change, problem = DAMAGED_RECORDS[name]
    run = _copy(toy_runs[0], tmp_path)
    path = _edit_record(run, change, line=2)
    code, _, err = run_cli(["view", str(run), "--port", "0"])
    assert code == 2 and "Traceback" not in err
    assert f"{path}:3: {problem}" in err


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("configs", 7, "`configs` is a number, not an object"),
        ("model", "x", "`model` is a string, not an object"),
        ("results", [], "`results` is a list, not an object"),
        ("reports", 5, "`reports` is a number, not a list"),
        ("configs", {"toy_tones": 3}, "`configs.toy_tones` is a number, not an object"),
        (
            "results",
            {"toy_tones": {"0-shot": {"accuracy": "high", "n": 4}}},
            "`accuracy` is str, not a number",
        ),
    ],
)
def test_a_damaged_results_json_field_is_named(toy_runs, tmp_path, field, value, says):
    run = _copy(toy_runs[0], tmp_path)
    path = _edit_results(run, **{field: value})
    code, _, err = run_cli(["view", str(run), "--port", "0"])
    assert code == 2 and "Traceback" not in err
    assert f"{path}:1: " in err and says in err  # the file is one line here


def test_a_sample_log_changed_after_opening_is_one_line_not_a_traceback(toy_runs, tmp_path, terminal):
    run = _copy(toy_runs[0], tmp_path)
    with serve(run) as server:
        first = api(server, "run/0/samples")["samples"][0]["id"]
        (run / "samples_toy_tones.jsonl").write_text("garbage\n" * 50)
        status, _, body = get(server, f"/api/run/0/sample/{first}")
    assert status == 500
    assert (
        "samples_toy_tones.jsonl:1: the sample log changed since the viewer opened it"
        in json.loads(body)["error"]
    )
    warnings = [r for r in terminal.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None


def test_damage_deeper_in_results_json_is_one_line_naming_the_run(toy_runs, tmp_path, terminal):
    run = _copy(toy_runs[0], tmp_path)
    results = json.loads((run / "results.json").read_text())
    results["configs"]["toy_tones"]["config"]["parameters"] = 7
    (run / "results.json").write_text(json.dumps(results))
    with serve(run) as server:
        status, _, body = get(server, "/api/run/0/overview")
        assert get(server, "/api/run/0/samples")[0] == 200  # the rest of the run still shows
    assert status == 500
    assert f"{run}/results.json or its sample logs may be damaged" in json.loads(body)["error"]
    warnings = [r for r in terminal.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None
    assert "/api/run/0/overview failed" in warnings[0].getMessage()


def test_a_forged_sha256_is_never_served(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    forged = "f" * 64

    def forge(record):
        for message in record["messages"]:
            for part in message["content"]:
                if part["type"] == "audio":
                    part["sha256"] = forged

    _edit_record(run, forge, line=0)
    with serve(run) as server:
        sample = api(server, "run/0/samples")["samples"][0]
        detail = api(server, f"run/0/sample/{sample['id']}")
        audio = [p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"]
        assert audio and all(p["status"] == "differs" and p["url"] is None for p in audio)
        episode = sample["episode"]
        assert get(server, f"/audio/0/toy_tones/{episode}/{forged}.wav")[0] == 404


def test_a_sha256_that_is_a_path_is_shown_as_differing(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)

    def forge(record):
        for message in record["messages"]:
            for part in message["content"]:
                if part["type"] == "audio":
                    part["sha256"] = "../../../../etc/passwd"

    _edit_record(run, forge, line=0)
    with serve(run) as server:
        sample = api(server, "run/0/samples")["samples"][0]
        detail = api(server, f"run/0/sample/{sample['id']}")
    audio = [p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"]
    assert audio and all(p["status"] == "differs" and p["url"] is None for p in audio)


# --- clients that go away ------------------------------------------------------------------------------------


@pytest.mark.parametrize("gone", [BrokenPipeError, ConnectionResetError])
def test_a_client_that_disconnects_mid_answer_leaves_no_traceback(toy_runs, capfd, monkeypatch, gone):
    sent = Handler._send

    def break_off(self, status, body, *args, **kwargs):
        if self.path.startswith("/api/run/0/samples"):
            raise gone(32, "the client went away")
        return sent(self, status, body, *args, **kwargs)

    monkeypatch.setattr(Handler, "_send", break_off)
    with serve(toy_runs[0]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", "/api/run/0/samples")
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            conn.getresponse().read()
        conn.close()
        assert get(server, "/api/runs")[0] == 200  # and it keeps serving
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err


@pytest.mark.slow
def test_a_client_that_closes_the_socket_at_once_leaves_no_traceback(toy_runs, capfd):
    import socket
    import struct

    with serve(toy_runs[0]) as server:
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", server.port))
            sock.sendall(f"GET /api/run/0/samples HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, not FIN
            sock.close()
        assert get(server, "/api/runs")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err


# --- export and binding --------------------------------------------------------------------------------------


def test_export_onto_a_folder_with_other_files_is_refused_and_leaves_them(toy_runs, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "thesis.tex").write_text("precious")
    code, _, err = run_cli(["view", str(toy_runs[0]), "--export", str(target)])
    assert code == 2 and "the folder is not empty and holds no earlier export" in err
    assert sorted(p.name for p in target.iterdir()) == ["thesis.tex"]


def test_export_onto_a_file_is_refused(toy_runs, tmp_path):
    target = tmp_path / "a_file"
    target.write_text("x")
    code, _, err = run_cli(["view", str(toy_runs[0]), "--export", str(target)])
    assert code == 2 and "exists and is not a folder" in err and target.read_text() == "x"


def test_export_of_a_damaged_log_names_the_line_instead_of_a_type_error(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    path = _edit_record(run, lambda r: r.__setitem__("messages", 7), line=1)
    code, _, err = run_cli(["view", str(run), "--export", str(tmp_path / "site")])
    assert code == 2 and "TypeError" not in err
    assert f"{path}:2: `messages` is a number, not a list" in err


def test_serving_beyond_this_machine_needs_host_and_says_so(toy_runs, monkeypatch):
    monkeypatch.setattr(ViewerServer, "serve_forever", lambda self: None)
    code, out, err = run_cli(["view", str(toy_runs[0]), "--port", "0"])
    assert code == 0 and "at http://127.0.0.1:" in out and "anyone who can reach" not in err
    code, out, err = run_cli(["view", str(toy_runs[0]), "--port", "0", "--host", "0.0.0.0"])
    assert code == 0 and "at http://0.0.0.0:" in out
    assert "serving on 0.0.0.0: anyone who can reach this address can read these runs" in err


def _point_builder_at(run: Path, path: Path) -> None:
    results = json.loads((run / "results.json").read_text())
    results["configs"]["toy_tones"]["builder_file"] = str(path)
    (run / "results.json").write_text(json.dumps(results))


def _note_of_first_clip(run: Path, trust: bool) -> str:
    record = json.loads((run / "samples_toy_tones.jsonl").read_text().splitlines()[0])
    with serve(run, trust_builder_files=trust) as server:
        parts = audio_parts(api(server, f"run/0/sample/toy_tones/{record['episode']}/{record['shots']}"))
    assert parts and all(p["status"] == "unavailable" for p in parts)
    return parts[0]["note"]


def test_a_builder_file_named_by_a_foreign_results_json_is_not_run_without_trust(toy_runs, tmp_path):
    """A run folder from someone else could name any .py file as its builder: viewing it must not run that
    code unless the user says --trust_builder_files."""
    run = _copy(toy_runs[0], tmp_path)
    marker = tmp_path / "ran.txt"
    evil = tmp_path / "evil_builder.py"
    evil.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n")
    _point_builder_at(run, evil)

    note = _note_of_first_clip(run, trust=False)
    assert f"builder is the file {evil}" in note and "--trust_builder_files" in note
    assert not marker.exists()
    code, out, err = run_cli(["view", str(run), "--export", str(tmp_path / "site")])
    assert code == 0 and not marker.exists()
    assert f"task toy_tones's builder is the file {evil} (code outside audioeval)" in err

    _note_of_first_clip(run, trust=True)  # trusted: the file runs (and, not being a builder, cannot rebuild)
    assert marker.read_text() == "ran"


def test_a_builder_name_outside_the_shipped_builders_is_not_imported(toy_runs, tmp_path):
    run = _copy(toy_runs[0], tmp_path)
    results = json.loads((run / "results.json").read_text())
    results["configs"]["toy_tones"]["config"]["builder"] = "../../../../tmp/evil"
    (run / "results.json").write_text(json.dumps(results))
    note = _note_of_first_clip(run, trust=True)
    assert "builder '../../../../tmp/evil' is not one of audioeval's builders" in note


def test_the_toy_run_plays_its_audio_when_its_builder_file_is_trusted(toy_runs):
    record = json.loads((toy_runs[0] / "samples_toy_tones.jsonl").read_text().splitlines()[0])
    with serve(toy_runs[0], trust_builder_files=True) as server:
        parts = audio_parts(api(server, f"run/0/sample/toy_tones/{record['episode']}/{record['shots']}"))
    assert parts and all(p["status"] == "ok" for p in parts)


# --- the static export: the server's Content-Security-Policy, in the page ------------------------------------


class _Counting(http.server.BaseHTTPRequestHandler):
    """A remote host as far as the page knows: counts every request it gets and answers with a 1×1 GIF."""

    hits: list[str] = []
    GIF = bytes.fromhex(
        "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b"
    )

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/gif")
        self.send_header("Content-Length", str(len(self.GIF)))
        self.end_headers()
        self.wfile.write(self.GIF)


def _run_with_remote_image(toy_runs, tmp_path: Path, url: str) -> Path:
    run = _copy(toy_runs[0], tmp_path)
    (run / "notes.md").write_text(f"# Notes\n\n![tracking pixel]({url}/pixel.gif)\n\nplain text\n")
    results = json.loads((run / "results.json").read_text())
    _edit_results(run, reports=[*(results.get("reports") or []), str(run / "notes.md")])
    return run


def test_an_export_carries_the_servers_policy_in_its_page(toy_runs, tmp_path):
    from audioeval.viewer.server import META_CSP

    run = _run_with_remote_image(toy_runs, tmp_path, "http://127.0.0.1:9")
    code, _, err = run_cli(["view", str(run), "--export", str(tmp_path / "site")])
    assert code == 0, err
    page = (tmp_path / "site" / "index.html").read_text()
    with serve(run) as server:
        _, headers, _ = get(server, "/")
    served = headers["Content-Security-Policy"]
    # the same policy, less what only a header can say (a <meta> cannot hold frame-ancestors)
    assert META_CSP == served.replace("; frame-ancestors 'none'", "")
    assert (
        f'<meta http-equiv="Content-Security-Policy" content="{META_CSP.replace(chr(39), "&#39;")}">' in page
    )
    assert page.index("Content-Security-Policy") < page.index("<script")  # before anything loads


@pytest.mark.slow
@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no headless browser: {unavailable_reason()}")
def test_an_export_opened_from_disk_fetches_nothing_remote(toy_runs, tmp_path):
    """A report's remote image is not fetched when the export is opened from disk; the same page without the
    policy does fetch it (so the check can see a fetch)."""
    from selenium.webdriver.support.ui import WebDriverWait

    _Counting.hits = []
    remote = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=remote.serve_forever, daemon=True).start()
    try:
        run = _run_with_remote_image(toy_runs, tmp_path, f"http://127.0.0.1:{remote.server_address[1]}")
        site = tmp_path / "site"
        code, _, err = run_cli(["view", str(run), "--export", str(site)])
        assert code == 0, err
        unprotected = tmp_path / "unprotected"
        shutil.copytree(site, unprotected)
        page = (unprotected / "index.html").read_text()
        (unprotected / "index.html").write_text(
            re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
        )
        with headless_chromium() as driver:
            driver.get((site / "index.html").as_uri() + "#/overview/0")
            WebDriverWait(driver, 60).until(
                lambda d: d.find_elements("css selector", ".markdown img"), "the report's image element"
            )
            time.sleep(2)  # time enough for a fetch to reach the remote host
            assert _Counting.hits == [], "the export fetched a remote image"
            driver.get((unprotected / "index.html").as_uri() + "#/overview/0")
            WebDriverWait(driver, 60).until(lambda d: _Counting.hits, "the unprotected page's fetch")
            assert _Counting.hits == ["/pixel.gif"]
    finally:
        remote.shutdown()
        remote.server_close()
