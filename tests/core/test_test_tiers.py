"""The two test tiers: `pytest` runs the fast one, `pytest --runslow` both; a fast test that starts a Python
process or a browser fails, saying to mark it slow (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _starts_a_slow_process

ROOT = Path(__file__).resolve().parents[2]


def test_a_fast_test_that_starts_python_fails_saying_to_mark_it_slow():
    with pytest.raises(AssertionError, match="mark this test @pytest.mark.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_what_counts_as_a_slow_process():
    python = sys.executable
    assert _starts_a_slow_process([python, "-m", "audioeval", "--tasks", "toy"])
    assert _starts_a_slow_process(["accelerate", "launch", "-m", "audioeval"])
    assert _starts_a_slow_process(["/usr/bin/chromedriver", "--port=0"])
    # the harness's own helper process and ordinary tools run in every tier
    assert not _starts_a_slow_process([python, "-m", "audioeval.audio.espeak_zygote"])
    assert not _starts_a_slow_process(["git", "rev-parse", "HEAD"])


@pytest.mark.slow
def test_plain_pytest_deselects_the_slow_tier_and_runslow_keeps_it():
    this = str(Path(__file__).relative_to(ROOT))

    def collected(*flags: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *flags, this],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        return done.stdout

    fast, both, slow = collected(), collected("--runslow"), collected("-m", "slow")
    assert "2/3 tests collected (1 deselected)" in fast and "1 slow tests not run" in fast, fast
    assert "3 tests collected" in both and "deselected" not in both, both
    assert "1/3 tests collected (2 deselected)" in slow, slow
