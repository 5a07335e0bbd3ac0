"""End-to-end runs of the harness on the toy task: output shape, determinism across batch sizes, process
counts and reruns, and resuming after a kill or Ctrl-C."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audioeval.testing.fake_openai import FakeOpenAIServer
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


def _toy_args(toy_dir: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--tasks",
        "toy",
        "--include_path",
        str(toy_dir),
        "--output_path",
        str(out),
        "--log_samples",
        "--no_progress",
        *extra,
    ]


@pytest.mark.slow
def test_results_samples_and_table(toy_dir, tmp_path):
    code, out, err = run_cli(
        _toy_args(toy_dir, tmp_path / "out", "--model", "chance", "--cache_dir", str(tmp_path / "c"))
    )
    assert code == 0, err
    run_dir = latest_run(tmp_path / "out")
    assert run_dir.parent.name == "chance"
    results = load_results(run_dir)
    block = results["results"]["toy_tones"]["1-shot"]
    for key in ("accuracy", "accuracy_stderr", "accuracy_ci95", "parse_failure_rate", "n"):
        assert key in block
    assert block["n"] == 12 and len(block["accuracy_ci95"]) == 2
    assert block["accuracy_ci95"][0] <= block["accuracy"] <= block["accuracy_ci95"][1]
    assert set(results["results"]) == {"toy_tones", "toy_tones_chat"}
    assert results["groups"]["toy"]["3-shot"]["subtasks"] == ["toy_tones", "toy_tones_chat"]
    assert len(results["configs"]["toy_tones"]["hash"]) == 64
    assert {"audioeval", "torch", "transformers", "datasets"} <= set(results["versions"])
    timing = results["timing"]
    assert timing["samples"] == 72 and timing["audio_seconds"] > 0 and timing["real_time_factor"] > 0
    samples = load_samples(run_dir, "toy_tones", drop_volatile=False)
    assert len(samples) == 36
    first = samples[0]
    assert {"messages", "response", "prediction", "target", "scores", "latency_s", "cached"} <= set(first)
    audio_parts = [p for m in first["messages"] for p in m["content"] if p["type"] == "audio"]
    assert audio_parts and set(audio_parts[0]) == {"type", "sha256", "seconds", "sampling_rate"}
    assert [(s["episode"], s["shots"]) for s in samples] == sorted(
        (s["episode"], s["shots"]) for s in samples
    )
    # compact on screen (the main metric, a column per k), every metric in the run folder
    assert "| task | metric | k=0 | k=1 | k=3 | n |" in out and "| toy_tones | accuracy |" in out
    assert "parse_failure_rate" not in out  # all zero: not shown
    assert f"full table (every metric, stderr, errors): {run_dir}/summary.md" in out
    assert f"audioeval view {run_dir}" in out.splitlines()[-1]
    summary = (run_dir / "summary.md").read_text()
    assert summary.startswith("| task |") and "| toy_tones | 1 | accuracy |" in summary


@pytest.mark.slow
def test_batch_size_and_rerun_do_not_change_results(toy_dir, tmp_path):
    runs = []
    for i, extra in enumerate((["--batch_size", "1"], ["--batch_size", "4"], ["--batch_size", "4"])):
        cache = tmp_path / ("shared" if i else "first")
        code, _, err = run_cli(
            _toy_args(toy_dir, tmp_path / f"o{i}", "--model", "chance", "--cache_dir", str(cache), *extra)
        )
        assert code == 0, err
        runs.append(latest_run(tmp_path / f"o{i}"))
    results = [load_results(r) for r in runs]
    assert results[0]["results"] == results[1]["results"] == results[2]["results"]
    assert results[0]["groups"] == results[1]["groups"]
    assert (
        load_samples(runs[0], "toy_tones")
        == load_samples(runs[1], "toy_tones")
        == load_samples(runs[2], "toy_tones")
    )
    assert results[1]["timing"]["cached_responses"] == 0
    assert results[2]["timing"]["cached_responses"] == 72  # the rerun computed nothing
    assert all(s["cached"] for s in load_samples(runs[2], "toy_tones", drop_volatile=False))


@pytest.mark.slow
def test_seed_changes_episodes(toy_dir, tmp_path):
    hashes = []
    for seed in ("0", "1"):
        code, _, err = run_cli(
            _toy_args(
                toy_dir,
                tmp_path / seed,
                "--model",
                "chance",
                "--no_cache",
                "--seed",
                seed,
                "--tasks",
                "toy_tones",
            )
        )
        assert code == 0, err
        samples = load_samples(latest_run(tmp_path / seed), "toy_tones")
        hashes.append(
            [
                p["sha256"]
                for s in samples
                for m in s["messages"]
                for p in m["content"]
                if p["type"] == "audio"
            ]
        )
    assert hashes[0] != hashes[1]


def test_limit_takes_the_first_episodes(toy_dir, tmp_path):
    code, _, err = run_cli(
        _toy_args(
            toy_dir,
            tmp_path / "o",
            "--model",
            "chance",
            "--no_cache",
            "--limit",
            "0.25",
            "--num_fewshot",
            "0,1",
        )
    )
    assert code == 0, err
    samples = load_samples(latest_run(tmp_path / "o"), "toy_tones")
    assert sorted({s["episode"] for s in samples}) == [0, 1, 2] and {s["shots"] for s in samples} == {0, 1}


@pytest.mark.slow
def test_two_processes_match_one(toy_dir, tmp_path):
    base = _toy_args(toy_dir, tmp_path / "two", "--model", "chance", "--no_cache", "--batch_size", "4")
    proc = run_two_processes(base, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = latest_run(tmp_path / "two")
    assert load_results(two)["world_size"] == 2
    code, _, err = run_cli(
        _toy_args(toy_dir, tmp_path / "one", "--model", "chance", "--no_cache", "--batch_size", "1")
    )
    assert code == 0, err
    one = latest_run(tmp_path / "one")
    assert load_results(one)["results"] == load_results(two)["results"]
    assert load_results(one)["groups"] == load_results(two)["groups"]
    for task in ("toy_tones", "toy_tones_chat"):
        assert load_samples(one, task) == load_samples(two, task)
    assert not list(two.glob("*.partial.jsonl"))


# --- interruption --------------------------------------------------------------------------------------------


def _api_args(toy_dir: Path, out: Path, cache: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "audioeval",
        *_toy_args(
            toy_dir,
            out,
            "--tasks",
            "toy_tones",
            "--model",
            "openai",
            "--model_args",
            f"model=toy-remote,base_url=http://127.0.0.1:{port}/v1,num_concurrent=1",
            "--cache_dir",
            str(cache),
        ),
    ]


def _wait_for_requests(
    server: FakeOpenAIServer, count: int, proc: subprocess.Popen, timeout: float = 120
) -> None:
    deadline = time.time() + timeout
    while len(server.requests) < count:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.time() < deadline, "the run did not reach the expected number of requests"
        time.sleep(0.05)


@pytest.mark.slow
def test_sigkill_midway_then_resume_computes_only_missing(toy_dir, tmp_path):
    port = free_port()
    cache = tmp_path / "cache"
    with FakeOpenAIServer(reply=toy_answer, delay=0.05, port=port) as server:
        proc = subprocess.Popen(
            _api_args(toy_dir, tmp_path / "killed", cache, port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for_requests(server, 12, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        (killed_dir,) = (tmp_path / "killed").glob("*/*")
        assert (killed_dir / "INCOMPLETE").is_file() and not (killed_dir / "results.json").exists()
        with sqlite3.connect(cache / "responses.sqlite") as db:
            cached_before = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        assert 0 < cached_before < 36
        served_before = len(server.requests)
        resumed = subprocess.run(
            _api_args(toy_dir, tmp_path / "resumed", cache, port), capture_output=True, text=True, timeout=300
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert len(server.requests) - served_before == 36 - cached_before
        fresh = subprocess.run(
            _api_args(toy_dir, tmp_path / "fresh", tmp_path / "fresh-cache", port),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert fresh.returncode == 0, fresh.stderr[-3000:]
    resumed_dir, fresh_dir = latest_run(tmp_path / "resumed"), latest_run(tmp_path / "fresh")
    assert load_results(resumed_dir)["results"] == load_results(fresh_dir)["results"]
    assert load_samples(resumed_dir, "toy_tones") == load_samples(fresh_dir, "toy_tones")
    assert load_results(resumed_dir)["timing"]["cached_responses"] == cached_before


@pytest.mark.slow
def test_ctrl_c_keeps_cache_flushes_samples_and_rerun_resumes(toy_dir, tmp_path):
    port = free_port()
    cache = tmp_path / "cache"
    with FakeOpenAIServer(reply=toy_answer, delay=0.05, port=port) as server:
        proc = popen_interruptible(
            _api_args(toy_dir, tmp_path / "int", cache, port),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for_requests(server, 20, proc)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr[-2000:]
        assert "run the same command again to resume" in stderr and "Traceback" not in stderr
        partial = list((tmp_path / "int").glob("*/*/samples_toy_tones.rank0.partial.jsonl"))
        assert partial and all(
            json.loads(line)["task"] == "toy_tones" for line in partial[0].read_text().splitlines()
        )
        assert partial[0].read_text().count("\n") >= 4  # windows finished before the interrupt were flushed
        assert "(interrupted)" in (partial[0].parent / "INCOMPLETE").read_text()
        with sqlite3.connect(cache / "responses.sqlite") as db:
            cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        assert cached >= 16
        rerun = subprocess.run(
            _api_args(toy_dir, tmp_path / "again", cache, port), capture_output=True, text=True, timeout=300
        )
        assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert load_results(latest_run(tmp_path / "again"))["timing"]["cached_responses"] == cached
