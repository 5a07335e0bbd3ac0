"""The server: what it answers, what it never serves, and the command line's errors."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from viewer_helpers import api, get, serve, site_of

from audioeval.viewer.cli import cmd_view
from audioeval.viewer.server import ViewerServer
from tests.conftest import run_cli

TRAVERSALS = [
    "/files/0/../../../../etc/passwd",
    "/files/0/..%2F..%2F..%2Fetc%2Fpasswd",
    "/files/0/%2e%2e/results.json",
    "/files/0/%2Fetc%2Fpasswd",
    "/files/0/..%5C..%5Cresults.json",
    "/files/0/samples_toy_tones.jsonl",  # sample logs are read through the API only
    "/files/0/outside.txt",  # a link in the run folder leading out of it
    "/files/0/.hidden.json",
    "/files/1/results.json",  # no such run
    "/files/-1/results.json",
    "/static/../server.py",
    "/static/..%2F__init__.py",
    "/static/%2e%2e%2fserver.py",
    "/api/run/0/../../../etc/passwd",
    "/api/run/0/sample/..%2F..%2Fetc/0/0",
    "/audio/0/toy_tones/0/..%2F..%2Fresults.json",
    "/audio/0/../../etc/passwd/x.wav",
    "//etc/passwd",
    "/etc/passwd",
    "/files/0/%00results.json",
    "/files/0/%ff%fe.json",
]


def test_nothing_outside_the_run_folders_is_served(toy_runs, tmp_path):
    secret = tmp_path / "outside.txt"
    secret.write_text("SECRET")
    link = toy_runs[0] / "outside.txt"
    os.symlink(secret, link)
    try:
        with serve(toy_runs[0]) as server:
            for path in TRAVERSALS:
                status, _, body = get(server, path)
                assert status == 404, (path, status)
                assert b"SECRET" not in body and b"root:" not in body
            status, headers, body = get(server, "/files/0/results.json")
            assert status == 200 and json.loads(body)["seed"] == 0
            assert (
                "nosniff" in headers["X-Content-Type-Options"]
                and "default-src 'none'" in headers["Content-Security-Policy"]
            )
            assert get(server, "/static/app.js")[0] == 200
    finally:
        link.unlink()


def test_a_page_from_another_host_name_is_refused(toy_runs):
    """Bound to 127.0.0.1, the server answers only requests addressed to a loopback name (no DNS rebinding)."""
    with serve(toy_runs[0]) as server:
        assert get(server, "/api/runs", {"Host": "evil.example:80"})[0] == 403
        assert get(server, "/api/runs", {"Host": f"localhost:{server.port}"})[0] == 200


def test_audio_answers_byte_ranges(toy_runs):
    with serve(toy_runs[0]) as server:
        samples = api(server, "run/0/samples")["samples"]
        first = samples[0]
        detail = api(server, f"run/0/sample/{first['id']}")
        url = "/" + next(p["url"] for m in detail["messages"] for p in m["parts"] if p["type"] == "audio")
        status, headers, whole = get(server, url)
        assert status == 200 and headers["Accept-Ranges"] == "bytes"
        status, headers, part = get(server, url, {"Range": "bytes=4-11"})
        assert (
            status == 206 and part == whole[4:12] and headers["Content-Range"] == f"bytes 4-11/{len(whole)}"
        )
        assert get(server, url, {"Range": f"bytes={len(whole)}-"})[0] == 416


def run_blocks(run):
    return json.loads((run / "results.json").read_text())["results"]


def test_pages_and_data(toy_runs):
    with serve(*toy_runs) as server:
        status, headers, body = get(server, "/")
        head = body.split(b"<body")[0]
        assert status == 200 and b'src="static/app.js"' in body and b"://" not in head  # nothing remote
        runs = api(server, "runs")
        assert [r["model"] for r in runs] == ["chance", "demo-majority"]
        samples = api(server, "run/1/samples")
        assert samples["has_samples"] and len(samples["samples"]) == 2 * 4 * 3  # 2 tasks x 4 episodes x 3 k
        assert samples["scores"]["toy_tones"][0] == "accuracy"  # failure counters are never the default
        compare = api(server, "compare")
        toy = next(s for s in compare["series"] if s["name"] == "toy_tones")
        assert toy["metrics"][0] == "accuracy"
        assert sorted(toy["points"]["accuracy"]) == ["0", "1"]
        assert [p[0] for p in toy["points"]["accuracy"]["1"]] == [0, 1, 3]
        # the paired differences against the first run, with the episodes where the two disagree
        diffs = compare["differences"]
        assert diffs["paired"] and diffs["baseline"] == 0
        row = next(r for r in diffs["rows"] if (r["name"], r["k"]) == ("toy_tones", 1))
        accuracy = [run_blocks(run)["toy_tones"]["1-shot"]["accuracy"] for run in toy_runs]
        diff = row["differences"][1]
        assert row["differences"][0] is None and diff["value"] == pytest.approx(accuracy[1] - accuracy[0])
        assert diff["test"] == "mcnemar" and diff["pairs"] == 4
        assert diff["other_only"] - diff["base_only"] == round(4 * diff["value"])
        assert get(server, "/api/run/2/samples")[0] == 404
        assert get(server, "/api/run/0/sample/toy_tones/99/0")[0] == 404


@pytest.mark.slow
def test_a_run_without_sample_logs_says_so_and_shows_its_results(toy_run_without_samples):
    with serve(toy_run_without_samples) as server:
        samples = api(server, "run/0/samples")
        overview = api(server, "run/0/overview")["html"]
    assert not samples["has_samples"] and "--log_samples" in samples["note"]
    assert "made without <code>--log_samples</code>" in overview
    assert "toy_tones" in overview and "accuracy" in overview  # the aggregate tables are there


def test_an_unfinished_run_shows_what_it_logged(toy_runs, tmp_path):
    """A killed run leaves INCOMPLETE, no results.json and per-rank partial logs (the last line maybe cut)."""
    run = tmp_path / "killed"
    run.mkdir()
    (run / "INCOMPLETE").write_text("This run has not finished: it was killed.\n")
    lines = (toy_runs[0] / "samples_toy_tones.jsonl").read_text().splitlines(keepends=True)
    (run / "samples_toy_tones.rank0.partial.jsonl").write_text("".join(lines[:5]) + lines[5][:40])
    with serve(run) as server:
        samples = api(server, "run/0/samples")
        detail = api(server, f"run/0/sample/{samples['samples'][0]['id']}")
        overview = api(server, "run/0/overview")["html"]
    assert len(samples["samples"]) == 5
    assert "This run did not finish." in overview and "it was killed" in overview
    audio = [p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"]
    assert audio and all(p["status"] == "unavailable" for p in audio)
    assert "did not record this task's configuration" in audio[0]["note"]


def test_not_a_run_folder_is_a_clear_error(toy_runs, tmp_path):
    code, _, err = run_cli(["view", str(tmp_path / "nowhere")])
    assert code == 2 and "no such folder" in err and "Traceback" not in err
    code, _, err = run_cli(["view", str(toy_runs[0].parent)])  # OUTPUT_PATH/<model>, one level too high
    assert code == 2 and "not a run folder (no results.json), but it holds runs" in err
    assert str(toy_runs[0]) in err  # and names the run folders it holds
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text('{"results": {},\n  oops}')
    code, _, err = run_cli(["view", str(bad)])
    assert code == 2 and f"{bad / 'results.json'}:2:" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(toy_runs[0] / "results.json", broken / "results.json")
    first = (toy_runs[0] / "samples_toy_tones.jsonl").read_text().splitlines()[0]
    (broken / "samples_toy_tones.jsonl").write_text(first + "\nnot json\n")
    code, _, err = run_cli(["view", str(broken)])
    assert code == 2 and f"{broken / 'samples_toy_tones.jsonl'}:2: not a JSON line" in err


def test_a_port_in_use_is_named(toy_runs):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        code, _, err = run_cli(["view", str(toy_runs[0]), "--port", str(port)])
    finally:
        taken.close()
    assert code == 2 and f"--port {port}: port {port} on 127.0.0.1 is already in use" in err


def test_export_flags_without_export_are_refused(toy_runs):
    code, _, err = run_cli(["view", str(toy_runs[0]), "--limit", "2"])
    assert code == 2 and "--tasks and --limit choose what an --export writes" in err


def test_the_command_serves_until_stopped(toy_runs, capsys, monkeypatch):
    """`audioeval view RUN_DIR --port 0` prints its address and answers there."""
    started: list = []
    original = ViewerServer.serve_forever

    def serve_and_record(self):
        started.append(self)
        original(self)

    monkeypatch.setattr(ViewerServer, "serve_forever", serve_and_record)
    thread = threading.Thread(target=cmd_view, args=([str(toy_runs[0]), "--port", "0"],), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started, "the server did not start"
    server = started[0]
    with urllib.request.urlopen(server.url + "api/runs", timeout=30) as response:
        assert json.loads(response.read())[0]["model"] == "chance"
    server.httpd.shutdown()
    thread.join(30)
    assert not thread.is_alive()
    assert f"audioeval view: 1 run at http://127.0.0.1:{server.port}/" in capsys.readouterr().out


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_served_url_is_loopback_by_default(toy_runs, host):
    with ViewerServer(site_of(toy_runs[0]), host, 0) as server:
        assert server.httpd.server_address[0] == "127.0.0.1"


def test_overview_shows_reports_failures_settings_timing_and_versions(adu_run):
    results = json.loads((Path(adu_run) / "results.json").read_text())
    with serve(adu_run) as server:
        html = api(server, "run/0/overview")["html"]
    assert (
        "<h2>ADU-Bench report: openai (model=lalm)</h2>" in html
    )  # each report is a section under its title
    assert "Datasets (Table 2)" in html and "<table>" in html
    assert 'src="files/0/adu_bench_domains.png"' in html  # the report's figure, served from the run folder
    # the fake judge gives no number for about a third of the answers
    assert results["judges"]["judge-x"]["failed_verdicts"] > 0
    assert f'<td class="num bad">{results["judges"]["judge-x"]["failed_verdicts"]}</td>' in html
    assert "Judge failures" in html and "judge-x (holistic)" in html
    assert "Run settings" in html and "Timing" in html and "Versions" in html
    assert results["versions"]["torch"] in html


def test_run_settings_show_the_parameters_every_task_shares_once(audioicl_runs):
    """Nine AudioICL-Bench tasks share a dozen builder parameters: listed once above the table, and each row
    keeps only what is its own."""
    configs = json.loads((Path(audioicl_runs[0]) / "results.json").read_text())["configs"]
    params = [(c["config"].get("parameters") or {}) for c in configs.values()]
    assert len(params) >= 2
    shared = {k: v for k, v in params[0].items() if all(p.get(k) == v for p in params[1:])}
    assert shared, "the tasks share no parameter: nothing to check"
    with serve(audioicl_runs[0]) as server:
        html = api(server, "run/0/overview")["html"]
    settings = html.split("<h2>Run settings</h2>", 1)[1].split("</section>", 1)[0]
    assert "parameters of every task" in settings and "other parameters" in settings
    for key, value in shared.items():
        assert settings.count(f"{key}={value}") == 1, key
