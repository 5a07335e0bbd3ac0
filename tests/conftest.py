"""Shared test fixtures. Every test runs offline; caches live in a per-session temporary folder."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_SESSION_CACHE = tempfile.mkdtemp(prefix="audioeval-test-cache-")
os.environ.setdefault("AUDIOEVAL_CACHE", _SESSION_CACHE)
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FIXTURES = Path(__file__).parent / "fixtures"
TOY = FIXTURES / "toy"


@pytest.fixture
def toy_dir() -> Path:
    return TOY


def run_cli(args: list[str]) -> tuple[int, str, str]:
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""
    from audioeval.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def run_cli_subprocess(args: list[str], timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "audioeval", *args], capture_output=True, text=True, timeout=timeout, **kwargs
    )


def run_two_processes(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    """`accelerate launch` with 2 CPU processes (world size 2) running `audioeval args`."""
    env = {**os.environ, "ACCELERATE_DISABLE_RICH": "1"}
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "-m",
        "audioeval",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def latest_run(output_path: Path) -> Path:
    runs = sorted(p for p in output_path.glob("*/*") if (p / "results.json").exists())
    assert runs, f"no run folder with results.json under {output_path}"
    return runs[-1]


def load_results(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def load_samples(run_dir: Path, task: str, drop_volatile: bool = True) -> list[dict]:
    from audioeval.results.outputs import VOLATILE_SAMPLE_FIELDS

    records = [json.loads(line) for line in (run_dir / f"samples_{task}.jsonl").read_text().splitlines()]
    if drop_volatile:
        for r in records:
            for key in VOLATILE_SAMPLE_FIELDS:
                r.pop(key, None)
    return records


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toy_answer(body: dict) -> str:
    """A fake endpoint's reply to a toy_tones prompt: low or high, fixed by the prompt's content."""
    from audioeval.testing.fake_openai import prompt_text

    return "high" if hashlib.sha256(prompt_text(body).encode()).digest()[0] % 2 else "low"
