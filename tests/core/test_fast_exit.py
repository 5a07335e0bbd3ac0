"""The `audioeval` command exits without the interpreter's teardown (cli.exit_without_teardown), yet as the
interpreter would up to there: atexit handlers run, buffered output is written, the code is kept, and a thread
that is not a daemon is waited for."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # each test starts a Python process


def run_script(body: str, tmp_path) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


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
