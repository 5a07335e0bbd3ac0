"""The `audioeval` command is a script that pip writes (its work under `if __name__ == "__main__":`), so its runs
synthesize in worker processes, like `python -m audioeval`; another script, which may lack that guard, does not
unless AUDIOEVAL_SYNTHESIS_WORKERS says so, even one that calls the command's console() without the guard. A
failed run stops its workers without waiting for the episodes they are making."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from audioeval.run.worker_processes import close_worker_pool, worker_pool

# what pip writes for a console_scripts entry point, with main() replaced by a probe of the worker count
COMMAND = """#!{python}
import sys
import audioeval.cli as cli
from audioeval.run.worker_processes import synthesis_workers
cli.main = lambda: print("workers", synthesis_workers()) or 0
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(cli.console())
"""
PLAIN = """from audioeval.run.worker_processes import synthesis_workers
print("workers", synthesis_workers())
"""
# a wrapper of one's own that calls console() at its top level: each worker would run it again
UNGUARDED = """import audioeval.cli as cli
from audioeval.run.worker_processes import synthesis_workers
cli.main = lambda: print("workers", synthesis_workers()) or 0
cli.console()
"""


def _workers(path) -> int:
    env = {
        k: v for k, v in os.environ.items() if k not in ("AUDIOEVAL_SYNTHESIS_WORKERS", "LOCAL_WORLD_SIZE")
    }
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.slow
def test_the_audioeval_command_uses_workers_and_another_script_does_not(tmp_path):
    command, plain, unguarded = tmp_path / "audioeval", tmp_path / "script.py", tmp_path / "wrapper.py"
    command.write_text(COMMAND.format(python=sys.executable))
    plain.write_text(PLAIN)
    unguarded.write_text(UNGUARDED)
    assert _workers(command) == len(os.sched_getaffinity(0))
    assert _workers(plain) == 0
    assert _workers(unguarded) == 0


def _sleep_then(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.slow
def test_a_failed_run_stops_its_workers_without_waiting_for_their_episodes():
    pool = worker_pool(1)
    job = pool.submit(_sleep_then, 120)
    while not job.running():
        time.sleep(0.05)
    workers = list(pool._processes.values())
    closing = threading.Thread(target=close_worker_pool, kwargs={"now": True})
    closing.start()
    closing.join(60)  # without `now`, the close waits for the job: two minutes
    assert not closing.is_alive()
    for worker in workers:
        worker.join(30)
        assert not worker.is_alive()


# a preloaded module that notes its import, and its teardown (an object of its globals is deleted then)
MARKER = """import os
with open(os.path.join(os.environ["MARKS"], "loaded"), "w") as f:
    f.write("1")


class _Teardown:
    def __del__(self, _open=open, _path=os.path.join(os.environ["MARKS"], "teardown")):
        with _open(_path, "w") as f:
            f.write("1")


mark = _Teardown()
"""
STARTS_THE_SERVER = """import os, sys, time
from multiprocessing import forkserver
from audioeval.run import worker_processes
worker_processes.PRELOAD = ["audioeval.run.worker_processes", "teardown_marker"]
if __name__ == "__main__":
    worker_processes.start_forkserver()
    while not os.path.exists(os.path.join(os.environ["MARKS"], "loaded")):
        time.sleep(0.05)
    print(forkserver._forkserver._forkserver_pid)
"""


def _alive(pid: int) -> bool:
    """Whether the process runs (an exited one not yet reaped by whoever adopted it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_the_workers_server_ends_with_the_run_without_the_interpreters_teardown(tmp_path):
    """Its teardown of datasets, scipy and pandas held the command's output pipes open 0.3-0.4 s after the run
    had exited."""
    (tmp_path / "teardown_marker.py").write_text(MARKER)
    script = tmp_path / "run.py"
    script.write_text(STARTS_THE_SERVER)
    env = {**os.environ, "MARKS": str(tmp_path), "AUDIOEVAL_SYNTHESIS_WORKERS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), *sys.path])
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    server = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 60
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server), "the server outlived the run"
    assert (tmp_path / "loaded").is_file() and not (tmp_path / "teardown").exists()
