"""A run whose output's reader goes away (`audioeval ... |& head -1`) finishes its work and stops: no hang
with a progress bar updated from another thread, its results written, exit 141 as a shell tool's."""

import os
import subprocess
import sys

import pytest

from tests.conftest import latest_run


@pytest.mark.slow
def test_a_run_whose_reader_goes_away_finishes_and_stops(tmp_path):
    env = {**os.environ, "AUDIOEVAL_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "audioeval", "--tasks", "audioicl_audio_count", "--model", "chance"]
    command += ["--limit", "3", "--output_path", str(tmp_path / "out")]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    assert run.stdout is not None
    run.stdout.readline()  # the first line (a progress bar), then the reader is gone
    run.stdout.close()
    try:
        code = run.wait(timeout=240)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait()
        pytest.fail("the run hung once its output pipe closed")
    assert code in (0, 141)
    assert (latest_run(tmp_path / "out") / "results.json").is_file()
