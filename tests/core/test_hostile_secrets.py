"""Keys given where they do not belong never reach anything the harness writes or prints: results.json, the
samples, summary and reports, stdout and stderr (tracebacks at DEBUG too), the response cache and the episode
store (every table, every column), the viewer (served and exported). Each run is a user's: `python -m
audioeval` in a subprocess against the local fake servers, and every written byte is searched for the key.

A key typed as an argument (`api_key=sk-...`, `api_key_env=sk-...`) is refused before anything is written,
without being repeated; a key inside a URL (`http://user:KEY@host/v1`, `?api-key=KEY`, a password holding an
`@`) is used, and masked wherever the URL is recorded. A key the harness holds (from the environment, a URL's
credentials, a secret-named generation setting) is masked wherever it turns up, even in what a server sends
back."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.testing.fake_realtime import FakeRealtimeServer
from tests.conftest import TOY, run_cli_subprocess

TOY_RUN = ["--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "1", "--no_progress"]
JUDGE = "judge-x"


def leaks(secrets: list[str], root: Path) -> list[str]:
    """Every file under `root` (and every row of every SQLite table there) that holds one of the secrets."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path}: {s}" for s in secrets if s.encode() in data]
        if data[:16] == b"SQLite format 3\x00":
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                for row in db.execute(f"SELECT * FROM {table}"):  # noqa: S608 - names read from the file
                    text = repr(row)
                    found += [f"{path}:{table}: {s}" for s in secrets if s in text]
            db.close()
    return found


def in_text(secrets: list[str], *texts: str) -> list[str]:
    return [s for s in secrets if any(s in t for t in texts)]


def served_viewer(run_dir: Path) -> str:
    """What `audioeval view RUN` serves: the page and the data the page asks for."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "audioeval", "view", str(run_dir), "--port", "0", "--verbosity", "DEBUG"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ")[1].split()[0].rstrip("/")
        bodies = [line]
        for path in ("/", "/api/runs", "/api/run/0/overview", "/api/run/0/samples"):
            with urllib.request.urlopen(url + path, timeout=30) as reply:
                bodies.append(reply.read().decode("utf-8"))
        assert json.loads(bodies[-1]), "the viewer served no samples: nothing was checked"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    return "\n".join([*bodies, err])


def judged_reply(body: dict) -> str:
    return "Score: 7" if body.get("model") == JUDGE else "Saturn has the most moons."


@pytest.mark.slow
def test_keys_in_model_and_judge_urls_reach_no_file_log_cache_or_viewer(tmp_path: Path):
    secrets = {
        "model_password": "sk-SECRETmodelPassword1",
        "model_query": "sk-SECRETmodelQuery2",
        "judge_password": "sk-SECRETjudgePassword3",
        "judge_query": "sk-SECRETjudgeQuery4",
        "environment": "sk-SECRETfromTheEnvironment5",
    }
    keys = list(secrets.values())
    env = {**os.environ, "OPENAI_API_KEY": secrets["environment"], "AUDIOEVAL_CACHE": str(tmp_path / "work")}
    with FakeOpenAIServer(reply=judged_reply) as server:
        port = server.httpd.server_address[1]
        model_url = (
            f"http://me:{secrets['model_password']}@127.0.0.1:{port}/v1?api-key={secrets['model_query']}"
        )
        judge_url = (
            f"http://me:{secrets['judge_password']}@127.0.0.1:{port}/v1?api-key={secrets['judge_query']}"
        )
        proc = run_cli_subprocess(
            ["--tasks", "adu_general", "--limit", "1", "--model", "openai",
             "--model_args", f"base_url={model_url},model=lalm,max_retries=0",
             "--judge", "openai", "--judge_args", f"base_url={judge_url},model={JUDGE},max_retries=0",
             "--output_path", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"), "--log_samples",
             "--bootstrap_iters", "10", "--no_progress", "--verbosity", "DEBUG"],
            env=env,
        )  # fmt: skip
        auth = {h.get("authorization") for h in server.headers_seen}
    assert proc.returncode == 0, proc.stderr
    # the keys were used (so the search below has something to miss): Basic auth from the URLs' passwords
    assert len(auth) == 2 and all(a and a.startswith("Basic ") for a in auth)
    run_dir = next((tmp_path / "out").glob("*/*"))
    export = tmp_path / "export"
    viewed = run_cli_subprocess(
        ["view", str(run_dir), "--export", str(export), "--verbosity", "DEBUG"], env=env
    )
    assert viewed.returncode == 0, viewed.stderr
    assert json.loads((run_dir / "results.json").read_text())["model"]["model_args"]["base_url"] == (
        f"http://me:***@127.0.0.1:{port}/v1?api-key=***"
    )
    assert in_text(keys, proc.stdout, proc.stderr, viewed.stdout, viewed.stderr) == []
    assert in_text(keys, served_viewer(run_dir)) == []
    assert (tmp_path / "cache" / "responses.sqlite").exists() and (
        tmp_path / "cache" / "episodes.sqlite"
    ).exists()
    assert leaks(keys, tmp_path) == []


@pytest.mark.slow
def test_keys_in_realtime_and_asr_urls_reach_no_file_or_log(tmp_path: Path):
    secrets = [
        "sk-SECRETrealtimePassword1",
        "sk-SECRETrealtimeQuery2",
        "sk-SECRETasrPassword3",
        "sk-SECRETasrQuery4",
    ]
    with FakeRealtimeServer() as realtime, FakeOpenAIServer(transcribe=lambda wav, fields: "low") as asr:
        rt_url = f"http://me:{secrets[0]}@127.0.0.1:{realtime.port}/v1?api-key={secrets[1]}"
        asr_url = f"http://me:{secrets[2]}@127.0.0.1:{asr.httpd.server_address[1]}/v1?api-key={secrets[3]}"
        proc = run_cli_subprocess(
            [*TOY_RUN, "--model", "realtime", "--model_args", f"model=gpt-realtime,base_url={rt_url},max_retries=0",
             "--asr", "openai", "--asr_args", f"model=whisper-1,base_url={asr_url},max_retries=0",
             "--output_path", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"), "--log_samples",
             "--bootstrap_iters", "10", "--verbosity", "DEBUG"],
        )  # fmt: skip
        handshake = realtime.handshakes[0]["authorization"]
        transcribed = len(asr.transcriptions)
    assert proc.returncode == 0, proc.stderr
    assert (
        handshake.startswith("Basic ") and transcribed > 0
    )  # both endpoints were reached with the URLs' keys
    run_dir = next((tmp_path / "out").glob("*/*"))
    viewed = run_cli_subprocess(["view", str(run_dir), "--export", str(tmp_path / "export")])
    assert viewed.returncode == 0, viewed.stderr
    assert in_text(secrets, proc.stdout, proc.stderr, viewed.stdout, viewed.stderr) == []
    assert leaks(secrets, tmp_path) == []


KEY = "sk-SECRETtypedOnTheCommandLine9"
HF_TOKEN = "hf_SECRETtypedOnTheCommandLine9"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--model", "openai", "--model_args", f"model=m,base_url=http://127.0.0.1:9/v1,api_key={KEY}"],
         "audioeval: error: --model_args api_key: model 'openai' takes no keys on the command line"),
        (["--model", "chance", "--judge", "openai", "--judge_args", f"model=j,api_key={KEY}"],
         "audioeval: error: --judge openai (judge 1): --judge_args api_key: model 'openai' takes no keys"),
        (["--model", "realtime", "--model_args", f"model=m,base_url=http://127.0.0.1:9/v1,api_key={KEY}"],
         "audioeval: error: --model_args api_key: model 'realtime' takes no keys on the command line"),
        (["--model", "hf", "--model_args", f"pretrained=/nowhere,token={HF_TOKEN}"],
         "audioeval: error: --model_args token: model 'hf' takes no keys on the command line"),
        # the key pasted where the variable's name goes
        (["--model", "openai", "--model_args", f"model=m,base_url=http://127.0.0.1:9/v1,api_key_env={KEY}"],
         "audioeval: error: --model_args api_key_env: the value given is not the name of an environment variable"),
        (["--model", "chance", "--judge", "openai", "--judge_args", f"model=j,api_key_env={HF_TOKEN}A1b2C3d4e5F6"],
         "audioeval: error: --judge openai (judge 1): --judge_args api_key_env: the value given looks like a key"),
        # a malformed argument string is quoted back, its keys masked
        (["--model", "openai", "--model_args", f"model=m,api_key={KEY},oops"],
         "audioeval: error: --model_args: cannot read 'oops' in 'model=m,api_key=***,oops'."),
        (["--model", "openai", "--model_args", f"api_key={KEY},api_key={KEY}"],
         "audioeval: error: --model_args: the key 'api_key' is given twice in 'api_key=***,api_key=***'."),
    ],
)  # fmt: skip
def test_a_key_typed_as_an_argument_is_refused_before_anything_is_written(tmp_path: Path, flags, expected):
    out, cache, work = tmp_path / "out", tmp_path / "cache", tmp_path / "work"
    args = [*TOY_RUN, *flags, "--output_path", str(out), "--cache_dir", str(cache), "--log_samples"]
    env = {**os.environ, "AUDIOEVAL_CACHE": str(work)}
    quiet = run_cli_subprocess(args, env=env)
    assert quiet.returncode == 2
    assert quiet.stderr.startswith(expected), quiet.stderr
    assert len(quiet.stderr.strip().splitlines()) == 1 and "Traceback" not in quiet.stderr
    printed = [quiet.stdout, quiet.stderr]
    if "--model_args" in flags and "--model" in flags and flags[flags.index("--model") + 1] == "openai":
        debug = run_cli_subprocess([*args, "--verbosity", "DEBUG"], env=env)  # a fast backend: the DEBUG path
        assert debug.returncode == 2
        assert "Traceback" in debug.stderr  # DEBUG shows where it was raised, with the key masked there too
        printed += [debug.stdout, debug.stderr]
    assert in_text([KEY, HF_TOKEN], *printed) == []
    assert not out.exists() and not cache.exists()
    assert leaks([KEY, HF_TOKEN], tmp_path) == []


@pytest.mark.slow
def test_a_wrong_key_in_the_environment_is_named_by_its_variable_not_shown(tmp_path: Path):
    """The endpoint refuses the key: the message names the variable it came from, never the key."""
    from audioeval.testing.fake_realtime import FakeRealtimeServer as Server

    wrong = "sk-SECRETwrongKeyFromTheEnvironment"
    env = {**os.environ, "MY_KEY": wrong}
    with Server(api_key="sk-right") as server:
        started = time.monotonic()
        proc = run_cli_subprocess(
            [*TOY_RUN, "--model", "realtime",
             "--model_args", f"model=gpt-realtime,base_url=http://127.0.0.1:{server.port}/v1,api_key_env=MY_KEY",
             "--asr", "none", "--spoken_text", "transcript", "--output_path", str(tmp_path / "out"),
             "--cache_dir", str(tmp_path / "cache"), "--log_samples", "--verbosity", "DEBUG"],
            env=env,
        )  # fmt: skip
    assert proc.returncode != 0 and "rejected the API key from $MY_KEY (HTTP 401" in proc.stderr
    assert time.monotonic() - started < 120
    assert in_text([wrong], proc.stdout, proc.stderr) == [] and leaks([wrong], tmp_path) == []


@pytest.mark.slow
def test_a_key_typed_in_asr_args_is_refused_before_the_run_and_written_nowhere(tmp_path: Path):
    """--asr_args are checked with the other arguments, before the run folder exists: the refusal does not
    repeat the key, and nothing is written."""
    proc = run_cli_subprocess(
        [*TOY_RUN, "--model", "realtime", "--model_args", "model=m,base_url=http://127.0.0.1:9/v1",
         "--asr", "openai", "--asr_args", f"model=whisper-1,api_key={KEY}", "--output_path", str(tmp_path / "out"),
         "--cache_dir", str(tmp_path / "cache"), "--verbosity", "DEBUG"],
    )  # fmt: skip
    assert proc.returncode == 2
    assert "audioeval: error: --asr openai: --asr_args api_key: model 'openai' takes no keys" in proc.stderr
    assert not (tmp_path / "out").exists()
    assert in_text([KEY], proc.stdout, proc.stderr) == [] and leaks([KEY], tmp_path) == []


class _Echoing(BaseHTTPRequestHandler):
    """An endpoint that quotes back what it was sent, as some proxies and debug servers do: every other model
    request is refused with an error that names the Authorization header, the others answered with a reply
    that repeats it and the request's `user_token`; the judge is always refused that way."""

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # the readiness probe's GET /models
        self._send(200, {"object": "list", "data": [{"id": "lalm", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization", "")
        server = self.server
        assert isinstance(server, EchoingServer)
        with server.lock:
            server.requests[body["model"]] += 1
            server.seen.append((auth, body.get("user_token")))
            refused = body["model"] == JUDGE or server.requests[body["model"]] % 2 == 1
        if refused:
            self._send(400, {"error": {"message": f"invalid credentials in header Authorization: {auth}"}})
            return
        text = f"low (received Authorization: {auth}; user_token={body.get('user_token')})"
        self._send(
            200,
            {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
             "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        )  # fmt: skip


class EchoingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echoing)
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.seen: list[tuple[str, str | None]] = []


@contextmanager
def echoing_server() -> Iterator[EchoingServer]:
    server = EchoingServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_keys_a_server_quotes_back_are_masked_in_everything_written_and_not_cached(tmp_path: Path):
    """Three leaks: the environment's key quoted back in an error, a URL password holding an `@`, a secret-named
    --gen_kwargs value. None reaches stdout, stderr, results.json, samples, summary, report, export or caches;
    the answers that quoted a key are not cached (the rerun asks for them again)."""
    env_key = "sk-test-SECRETfromTheEnvironment6"
    password = "sk-test@SECRETurlPassword7"  # an @ inside the password
    token = "sk-test-SECRETgenKwargToken8"
    basic = base64.b64encode(f"me:{password}".encode()).decode()
    secrets = [env_key, password, "SECRETurlPassword7", token, basic]
    env = {**os.environ, "OPENAI_API_KEY": env_key, "AUDIOEVAL_CACHE": str(tmp_path / "work")}
    with echoing_server() as server:
        port = server.server_address[1]
        args = [
            "--tasks", "toy_bench", "--include_path", str(TOY), "--limit", "1", "--no_progress",
            "--model", "openai", "--model_args", f"model=lalm,base_url=http://me:{password}@127.0.0.1:{port}/v1,max_retries=0",
            "--gen_kwargs", f"extra_body.user_token={token}",
            "--judge", "openai", "--judge_args", f"model={JUDGE},base_url=http://127.0.0.1:{port}/v1,max_retries=0",
            "--output_path", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"), "--log_samples",
            "--bootstrap_iters", "10", "--verbosity", "DEBUG",
        ]  # fmt: skip
        first = run_cli_subprocess(args, env=env)
        asked = dict(server.requests)
        rerun = run_cli_subprocess(args, env=env)
        seen = list(server.seen)
    assert first.returncode == 0, first.stderr
    assert rerun.returncode == 0, rerun.stderr
    # the endpoint did get every secret, so the search below has something to miss
    assert {f"Basic {basic}", f"Bearer {env_key}"} <= {auth for auth, _ in seen}
    assert token in {t for _, t in seen}
    # answers that quoted a key were not cached: the rerun asked the model again, as often
    assert asked["lalm"] == 2 and server.requests["lalm"] == 4, server.requests
    assert "were not cached, so a rerun asks for them again" in first.stderr
    run_dir = next(p for p in sorted((tmp_path / "out").glob("*/*")) if (p / "results.json").exists())
    samples = [
        json.loads(line) for line in (run_dir / "samples_toy_bench_tones.jsonl").read_text().splitlines()
    ]
    # masked where they were, not dropped: the answer and the errors are kept, the keys in them are not
    answered, refused = sorted(samples, key=lambda s: s["error"] is not None)
    assert answered["response"].startswith("low (received Authorization: Basic ***; user_token=***)")
    assert refused["error"].endswith("invalid credentials in header Authorization: Basic ***")
    assert answered["judgments"]["graded"][JUDGE]["error"].endswith("Authorization: Bearer ***")
    assert all(s["gen_kwargs"]["extra_body.user_token"] == "***" for s in samples)
    warnings = json.loads((run_dir / "results.json").read_text())["warnings"]
    assert any("Authorization: Basic ***" in w for w in warnings), warnings
    export = run_cli_subprocess(["view", str(run_dir), "--export", str(tmp_path / "export")], env=env)
    assert export.returncode == 0, export.stderr
    assert (
        in_text(secrets, first.stdout, first.stderr, rerun.stdout, rerun.stderr, export.stdout, export.stderr)
        == []
    )
    assert leaks(secrets, tmp_path) == []


def test_a_password_holding_an_at_sign_is_masked_whole():
    from audioeval.redact import redact_text

    assert redact_text("base_url=http://user:sk-test@SECRET@host:8000/v1 failed") == (
        "base_url=http://user:***@host:8000/v1 failed"
    )
    assert redact_text("http://user:a@b@c@host/v1?api-key=k&x=1 and http://h/p@q") == (
        "http://user:***@host/v1?api-key=***&x=1 and http://h/p@q"
    )  # an @ in the path is no userinfo


def test_a_registered_secret_is_masked_in_any_text_and_short_values_are_not_registered():
    from audioeval.redact import holds_secret, redact, register_secret, register_url_credentials

    register_secret("sk-unit-REGISTEREDsecret1")
    register_secret("abc")  # too short to mask in free text: it would hide ordinary words
    register_url_credentials("http://me:pw-unit-REGISTERED2@host/v1")
    quoted = base64.b64encode(b"me:pw-unit-REGISTERED2").decode()
    record = {
        "error": "HTTP 401: Authorization: Bearer sk-unit-REGISTEREDsecret1 is wrong",
        "response": f"Basic {quoted} and pw-unit-REGISTERED2; abc",
        "gen_kwargs": {"extra_body.user_token": "abc", "max_new_tokens": 8},
    }
    assert redact(record) == {
        "error": "HTTP 401: Authorization: Bearer *** is wrong",
        "response": "Basic *** and ***; abc",
        "gen_kwargs": {"extra_body.user_token": "***", "max_new_tokens": 8},
    }
    assert holds_secret("x sk-unit-REGISTEREDsecret1 y") and not holds_secret("abc")
