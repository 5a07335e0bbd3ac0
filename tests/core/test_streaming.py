"""The streaming pipeline end to end against the fake OpenAI server with a spread of latencies: results that do
not depend on concurrency, timing or machines; endpoints and judges that fail; Ctrl-C mid-stream."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audioeval.testing.fake_openai import FakeOpenAIServer, Fault, prompt_text
from tests.conftest import (
    free_port,
    latest_run,
    load_results,
    load_samples,
    popen_interruptible,
    run_cli,
    run_two_processes,
    toy_answer,
)


def _judge(body: dict) -> str:
    text = prompt_text(body)
    if "Rate the answer" in text:
        return "7"
    return "Result: YES" if "**Response**: high" in text else "Result: NO"


def _args(toy_dir: Path, out: Path, cache: Path | None, model_args: str, *extra: str) -> list[str]:
    args = ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "openai"]
    args += ["--model_args", model_args, "--output_path", str(out), "--log_samples", "--no_progress"]
    args += ["--cache_dir", str(cache)] if cache is not None else ["--no_cache"]
    return args + list(extra)


@pytest.mark.slow
def test_results_do_not_depend_on_concurrency(toy_dir, tmp_path):
    port = free_port()
    runs = []
    with FakeOpenAIServer(reply=toy_answer, latency=(0.0, 0.08), port=port) as server:
        for concurrency in (1, 4, 32, 128):
            server.max_in_flight = 0
            model_args = f"model=toy,base_url={server.base_url},num_concurrent={concurrency}"
            out = tmp_path / f"c{concurrency}"
            code, _, err = run_cli(_args(toy_dir, out, None, model_args, "--task_args", "n_episodes=48"))
            assert code == 0, err
            assert server.max_in_flight == 1 if concurrency == 1 else 1 < server.max_in_flight <= concurrency
            runs.append(latest_run(out))
    results = [load_results(r) for r in runs]
    assert all(r["results"] == results[0]["results"] for r in results[1:])
    samples = load_samples(runs[0], "toy_tones")
    assert len(samples) == 144 and all(load_samples(r, "toy_tones") == samples for r in runs[1:])
    figures = results[3]["timing"]["endpoints"]["model"]
    assert figures["requests"] == 144 and figures["failed"] == 0 and 1 < figures["peak_in_flight"] <= 128
    assert 0 < figures["latency_p50_s"] <= figures["latency_p95_s"]


@pytest.mark.slow
def test_two_processes_at_64_in_flight_each_give_the_results_of_one(toy_dir, tmp_path):
    with FakeOpenAIServer(reply=toy_answer, latency=(0.0, 0.08)) as server:
        model_args = f"model=toy,base_url={server.base_url},num_concurrent=64"
        extra = ("--task_args", "n_episodes=64")
        proc = run_two_processes(_args(toy_dir, tmp_path / "two", None, model_args, *extra), timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert 1 < server.max_in_flight <= 128
        sent_by_two = len(server.requests)
        code, _, err = run_cli(_args(toy_dir, tmp_path / "one", None, model_args, *extra))
        assert code == 0, err
    two, one = latest_run(tmp_path / "two"), latest_run(tmp_path / "one")
    assert load_results(two)["world_size"] == 2 and sent_by_two == 192
    assert load_results(one)["results"] == load_results(two)["results"]
    assert load_samples(one, "toy_tones") == load_samples(two, "toy_tones")
    figures = load_results(two)["timing"]["endpoints"]["model"]
    assert figures["requests"] == 192 and figures["failed"] == 0 and figures["peak_in_flight"] <= 64


@pytest.mark.slow
def test_an_endpoint_going_down_stops_the_run_with_a_clear_error_and_keeps_the_answers(toy_dir, tmp_path):
    port = free_port()
    cache = tmp_path / "cache"
    model_args = f"model=toy,base_url=http://127.0.0.1:{port}/v1,num_concurrent=4,max_retries=1,max_consecutive_failures=3"
    faults = [Fault("503", times=10**6, after=10, retry_after=0.01)]  # answers 10 requests, then refuses all
    with FakeOpenAIServer(reply=toy_answer, latency=(0.0, 0.02), faults=faults, port=port) as server:
        code, _, err = run_cli(_args(toy_dir, tmp_path / "down", cache, model_args))
        answered = len(server.timings)
    assert code == 2
    assert (
        f"http://127.0.0.1:{port}/v1 (model toy) is not answering" in err and "last status: HTTP 503" in err
    )
    assert "Traceback" not in err
    with sqlite3.connect(cache / "responses.sqlite") as db:
        cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert cached == answered >= 10  # every answer received is in the cache
    with FakeOpenAIServer(
        reply=toy_answer, port=port
    ) as server:  # back up: the rerun sends only what is missing
        code, _, err = run_cli(_args(toy_dir, tmp_path / "again", cache, model_args))
        assert code == 0, err
        assert len(server.requests) == 36 - cached
    assert load_results(latest_run(tmp_path / "again"))["timing"]["cached_responses"] == cached


def _judged_args(toy_dir: Path, out: Path, cache: Path, model_url: str, judge_url: str) -> list[str]:
    return [
        "--tasks", "toy_tones_judged", "--include_path", str(toy_dir), "--model", "openai",
        "--model_args", f"model=toy,base_url={model_url},num_concurrent=4",
        "--judge", "openai", "--judge_args",
        f"model=judge-a,base_url={judge_url},max_retries=1,max_consecutive_failures=3,timeout=5",
        "--output_path", str(out), "--log_samples", "--cache_dir", str(cache), "--no_progress", "--limit", "6",
    ]  # fmt: skip


@pytest.mark.slow
def test_a_judge_that_is_down_never_stops_generation(toy_dir, tmp_path):
    model_port, judge_port, cache = free_port(), free_port(), tmp_path / "cache"
    judge_url = f"http://127.0.0.1:{judge_port}/v1"
    with FakeOpenAIServer(reply=toy_answer, latency=(0.0, 0.02), port=model_port) as model:
        code, _, err = run_cli(_judged_args(toy_dir, tmp_path / "o", cache, model.base_url, judge_url))
        assert len(model.requests) == 12  # every model request was sent and answered
    assert code == 3 and f"{judge_url} (model judge-a) is not answering" in err  # finished, exit code 3
    assert "judge endpoint(s) went down: judge-a" in err and "Every model response is cached" in err
    assert "Traceback" not in err
    results = load_results(latest_run(tmp_path / "o"))  # written before the error
    k0 = results["results"]["toy_tones_judged"]["0-shot"]
    assert k0["n"] == 6 and k0["accuracy"] is not None and k0["judge_agrees@judge-a_missing"] == 6
    assert results["judges"]["judge-a"]["failed_verdicts"] == 12 + 6  # `agrees` of 12 samples, `quality` of 6
    assert "endpoint_down" in results["judges"]["judge-a"]

    with (
        FakeOpenAIServer(reply=toy_answer, port=model_port) as model,
        FakeOpenAIServer(reply=_judge, port=judge_port) as judge,
    ):
        code, _, err = run_cli(_judged_args(toy_dir, tmp_path / "again", cache, model.base_url, judge_url))
        assert code == 0, err
        assert model.requests == [] and judge.requests  # only the judge requests are sent again
    again = load_results(latest_run(tmp_path / "again"))
    assert again["judges"]["judge-a"]["failed_verdicts"] == 0


@pytest.mark.slow
def test_identical_judge_requests_are_sent_once(toy_dir, tmp_path):
    with (
        FakeOpenAIServer(reply=toy_answer) as model,
        FakeOpenAIServer(reply=_judge, latency=(0.05, 0.2)) as judge,
    ):
        code, _, err = run_cli(
            _judged_args(toy_dir, tmp_path / "o", tmp_path / "c", model.base_url, judge.base_url)
        )
        assert code == 0, err
    prompts = [json.dumps(r["messages"], sort_keys=True) for r in judge.requests]
    # the toy judge prompts depend only on (target, response): many samples share one
    assert len(prompts) == len(set(prompts)) < 6 + 6 * 2
    results = load_results(latest_run(tmp_path / "o"))
    assert results["judges"]["judge-a"]["requests_sent"] == len(prompts)
    assert results["timing"]["endpoints"]["judge judge-a"]["requests"] == len(prompts)


@pytest.mark.slow
def test_ctrl_c_mid_stream_cancels_in_flight_flushes_and_the_rerun_resumes(toy_dir, tmp_path):
    port, cache = free_port(), tmp_path / "cache"
    model_args = f"model=toy,base_url=http://127.0.0.1:{port}/v1,num_concurrent=6"
    command = [sys.executable, "-m", "audioeval", *_args(toy_dir, tmp_path / "int", cache, model_args)]
    command += ["--task_args", "n_episodes=40"]
    with FakeOpenAIServer(reply=toy_answer, latency=(0.1, 0.4), port=port) as server:
        proc = popen_interruptible(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while len(server.timings) < 30:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            assert time.time() < deadline
            time.sleep(0.02)
        assert server.in_flight > 0  # interrupted mid-stream, with requests out
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr[-2000:]
        assert "run the same command again to resume" in stderr and "Traceback" not in stderr
        with sqlite3.connect(cache / "responses.sqlite") as db:
            cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        assert 0 < cached < 120
        partial = next((tmp_path / "int").glob("*/*/samples_toy_tones.rank0.partial.jsonl"))
        logged = [json.loads(line) for line in partial.read_text().splitlines()]
        assert logged and all(r["response"] for r in logged)
        sent_before = len(server.requests)
        rerun = subprocess.run(
            [sys.executable, "-m", "audioeval", *_args(toy_dir, tmp_path / "again", cache, model_args)]
            + ["--task_args", "n_episodes=40"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert len(server.requests) - sent_before == 120 - cached
        code, _, err = run_cli(
            _args(toy_dir, tmp_path / "fresh", None, model_args, "--task_args", "n_episodes=40")
        )
        assert code == 0, err
    again, fresh = latest_run(tmp_path / "again"), latest_run(tmp_path / "fresh")
    assert load_results(again)["results"] == load_results(fresh)["results"]
    assert load_samples(again, "toy_tones") == load_samples(fresh, "toy_tones")


def _launch_node(rank: int, port: int, args: list[str]) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "2",
        "--machine_rank", str(rank), "--num_processes", "2", "--main_process_ip", "127.0.0.1",
        "--main_process_port", str(port), "--mixed_precision", "no", "--dynamo_backend", "no",
        "-m", "audioeval", *args,
    ]  # fmt: skip
    env = {**os.environ, "ACCELERATE_DISABLE_RICH": "1"}
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.slow
def test_two_nodes_on_localhost_give_the_results_of_one_process(toy_dir, tmp_path):
    main_port = free_port()
    with FakeOpenAIServer(reply=toy_answer, latency=(0.0, 0.05)) as server:
        model_args = f"model=toy,base_url={server.base_url},num_concurrent=8"
        two = _args(toy_dir, tmp_path / "two", None, model_args)
        nodes = [_launch_node(rank, main_port, two) for rank in (0, 1)]
        outputs = [node.communicate(timeout=300) for node in nodes]
        for node, (_, stderr) in zip(nodes, outputs, strict=True):
            assert node.returncode == 0, stderr[-3000:]
        code, _, err = run_cli(_args(toy_dir, tmp_path / "one", None, model_args))
        assert code == 0, err
    two_dir, one_dir = latest_run(tmp_path / "two"), latest_run(tmp_path / "one")
    assert load_results(two_dir)["world_size"] == 2
    assert load_results(one_dir)["results"] == load_results(two_dir)["results"]
    assert load_samples(one_dir, "toy_tones") == load_samples(two_dir, "toy_tones")
