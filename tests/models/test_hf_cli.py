"""End to end through the command line: the toy task with a tiny checkpoint, then the same run from cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audioeval.cli import main

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"
SRC = Path(__file__).resolve().parents[2] / "src"


def _run(tiny_models, tmp_path, out: str) -> Path:
    argv = [
        "--model", "hf",
        "--model_args", f"pretrained={tiny_models['qwen2_audio']},max_new_tokens=4",
        "--include_path", str(TOY),
        "--tasks", "toy_tones,toy_tones_chat",
        "--limit", "2",
        "--batch_size", "4",
        "--output_path", str(tmp_path / out),
        "--cache_dir", str(tmp_path / "cache"),
        "--log_samples",
        "--bootstrap_iters", "0",
        "--no_progress",
    ]  # fmt: skip
    assert main(argv) == 0
    (run_dir,) = (tmp_path / out).glob("hf__qwen2_audio/*")
    return run_dir


def _samples(run_dir: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"samples_{task}.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_toy_task_runs_end_to_end_and_reruns_from_cache(tiny_models, tmp_path):
    first = _run(tiny_models, tmp_path, "first")
    results = json.loads((first / "results.json").read_text())
    identity = results["model"]["identity"]
    assert identity["family"] == "qwen2_audio" and identity["pretrained"] == str(tiny_models["qwen2_audio"])
    assert set(results["results"]) == {"toy_tones", "toy_tones_chat"}
    samples = _samples(first, "toy_tones") + _samples(first, "toy_tones_chat")
    assert len(samples) == 2 * 3 * 2  # 2 episodes x k in (0, 1, 3) x 2 tasks
    assert all(s["error"] is None and s["response"] for s in samples)
    assert not any(s["cached"] for s in samples)
    # k=3 sends four clips: all reached the prompt (the backend refuses otherwise)
    assert max(sum(p["type"] == "audio" for m in s["messages"] for p in m["content"]) for s in samples) == 4

    second = _run(tiny_models, tmp_path, "second")
    again = _samples(second, "toy_tones") + _samples(second, "toy_tones_chat")
    assert all(s["cached"] for s in again)
    assert [s["response"] for s in again] == [s["response"] for s in samples]


@pytest.mark.slow
def test_data_parallel_run_matches_a_single_process(tiny_models, tmp_path):
    """`accelerate launch` with two CPU processes (batch 4) gives the same responses as one process (batch 1)."""
    common = [
        "--model", "hf",
        "--model_args", f"pretrained={tiny_models['qwen2_audio']}",
        "--include_path", str(TOY),
        "--tasks", "toy_tones",
        "--limit", "4",
        "--log_samples", "--no_cache", "--no_progress",
        "--bootstrap_iters", "0",
    ]  # fmt: skip
    assert main([*common, "--batch_size", "1", "--output_path", str(tmp_path / "single")]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "audioeval"]  # fmt: skip
    done = subprocess.run(
        [*launch, *common, "--batch_size", "4", "--output_path", str(tmp_path / "parallel")],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    def responses(folder: str) -> list[tuple]:
        (run_dir,) = (tmp_path / folder).glob("hf__qwen2_audio/*")
        return [(s["episode"], s["shots"], s["response"]) for s in _samples(run_dir, "toy_tones")]

    single, parallel = responses("single"), responses("parallel")
    assert len(single) == 4 * 3 and parallel == single
