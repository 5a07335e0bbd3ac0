"""Shared test fixtures. Every test runs offline; caches live in a per-session temporary folder.

Two tiers: `pytest` runs the fast tier; tests marked `@pytest.mark.slow` (end-to-end runs in subprocesses,
`accelerate launch`, the real vLLM, the browser) run with `pytest --runslow` (both tiers, as .ci/run does) or
`pytest -m slow` (the slow tier alone). A fast test that starts a Python process or a browser fails, saying to
mark it slow (`_fast_tests_start_no_processes`); the fast tier makes episodes in the test's own process, without
synthesis workers."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--runslow",
        action="store_true",
        help="also run the slow tier (tests marked slow: subprocess runs, accelerate, vLLM, browser)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier by default: slow tests are deselected unless --runslow or a -m expression asks for them."""
    if config.getoption("--runslow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.stash[_SLOW_DESELECTED] = len(slow)


_SLOW_DESELECTED = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    count = config.stash.get(_SLOW_DESELECTED, 0)
    if count:
        terminalreporter.write_line(
            f"{count} slow tests not run (the fast tier): `pytest --runslow` runs both tiers, `-m slow` the slow one"
        )


# what only the slow tier may start: Python processes (python -m audioeval, accelerate launch, servers in their
# own process, vLLM) and browsers; the harness's own helper processes (the eSpeak NG zygote) run in every tier
_PROCESS_NAMES = ("python", "accelerate", "chromium", "chromedriver", "chrome", "vllm")
_HARNESS_HELPERS = ("audioeval.audio.espeak_zygote",)


def _starts_a_slow_process(argv: list[str]) -> bool:
    program = Path(argv[0]).name if argv else ""
    if not any(program.startswith(name) for name in _PROCESS_NAMES):
        return False
    return not any(helper in argv for helper in _HARNESS_HELPERS)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Enforces the tiers: a test that is not marked slow and starts a Python process or a browser fails."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    # episodes are made in this process: synthesis workers are Python processes (the slow tier tests them)
    monkeypatch.setenv("AUDIOEVAL_SYNTHESIS_WORKERS", "0")
    original = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        argv = [os.fsdecode(a) for a in argv]
        if _starts_a_slow_process(argv):
            raise AssertionError(
                f"a test of the fast tier started {' '.join(argv[:4])!r}: tests that start a Python process or "
                "a browser belong to the slow tier; mark this test @pytest.mark.slow"
            )
        original(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
    yield


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_interruptible(command: list[str], **kwargs) -> subprocess.Popen:
    """A child that Ctrl-C (SIGINT) interrupts whatever job the test suite runs in: a suite started in the
    background hands its children an ignored SIGINT, which Python then keeps ignoring."""
    return subprocess.Popen(command, preexec_fn=_default_sigint, **kwargs)


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
