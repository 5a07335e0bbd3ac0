"""The `audioeval` command is a script that pip writes (its work under `if __name__ == "__main__":`), so its runs
synthesize in worker processes, like `python -m audioeval`; another script, which may lack that guard, does not
unless AUDIOEVAL_SYNTHESIS_WORKERS says so."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


def _workers(path) -> int:
    env = {
        k: v for k, v in os.environ.items() if k not in ("AUDIOEVAL_SYNTHESIS_WORKERS", "LOCAL_WORLD_SIZE")
    }
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.slow
def test_the_audioeval_command_uses_workers_and_another_script_does_not(tmp_path):
    command, plain = tmp_path / "audioeval", tmp_path / "script.py"
    command.write_text(COMMAND.format(python=sys.executable))
    plain.write_text(PLAIN)
    assert _workers(command) == len(os.sched_getaffinity(0))
    assert _workers(plain) == 0
