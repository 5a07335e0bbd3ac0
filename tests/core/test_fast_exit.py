"""The `audioeval` command exits without the interpreter's teardown (cli.exit_without_teardown), yet as the
interpreter would up to there: atexit handlers run, buffered output is written, the code is kept, and a thread
that is not a daemon is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts a Python process


def buffered_env() -> dict[str, str]:
    """The environment with Python's output buffered as by default (this machine sets PYTHONUNBUFFERED)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def run_script(body: str, tmp_path) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          env=buffered_env())  # fmt: skip


def test_atexit_handlers_run_and_buffered_output_is_written(tmp_path):
    done = run_script(
        """
        import atexit, sys
        from audioeval.cli import exit_without_teardown
        atexit.register(lambda: print("atexit ran"))
        sys.stdout.write("buffered " * 1000)  # stdout to a pipe: block-buffered, unwritten until flushed
        exit_without_teardown(3)
        """,
        tmp_path,
    )
    assert done.returncode == 3
    assert done.stdout.startswith("buffered " * 1000) and done.stdout.endswith("atexit ran\n")


def test_a_thread_still_at_work_is_waited_for(tmp_path):
    marker = tmp_path / "written"
    done = run_script(
        f"""
        import threading, time
        from pathlib import Path
        from audioeval.cli import exit_without_teardown
        def work():
            time.sleep(0.5)
            Path({str(marker)!r}).write_text("done")
        threading.Thread(target=work).start()
        exit_without_teardown(0)
        """,
        tmp_path,
    )
    assert done.returncode == 0 and marker.read_text() == "done"


def test_the_command_keeps_its_exit_code(tmp_path):
    done = subprocess.run([sys.executable, "-m", "audioeval", "--tasks", "no_such_task"], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and "no_such_task" in done.stderr


def test_closed_streams_and_a_reader_that_left_keep_a_clear_exit_code(tmp_path):
    script = tmp_path / "script.py"
    # the output stays buffered until the exit flushes it: by then the reader (`true`) has long left
    script.write_text("import sys, time\nfrom audioeval.cli import exit_without_teardown\ntime.sleep(0.5)\n"
                      "sys.stdout and sys.stdout.write('last line')\nexit_without_teardown(0)\n")  # fmt: skip
    closed = subprocess.run(f"{sys.executable} {script} >&- 2>&-", shell=True, timeout=60, env=buffered_env())
    assert closed.returncode == 0  # nothing to flush to is not an error
    left = subprocess.run(f"set -o pipefail; {sys.executable} {script} | true", shell=True, executable="/bin/bash",
                          timeout=60, env=buffered_env())  # fmt: skip
    assert left.returncode == 141  # the output was cut short: as the CLI says of a broken pipe
