"""The synthesis worker processes: how many a run uses, the multiprocessing forkserver they are forked from
(it imports what synthesis needs once, for all of them), and the one pool per process that runs them.

Kept apart from synthesis.py and light to import (the standard library only), so that a run can start the
forkserver as soon as its flags are checked (api/evaluate.py), while its own process still imports and
prepares: the server's imports take a couple of seconds of CPU that the first episodes would otherwise wait
for.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

log = logging.getLogger("audioeval")

WORKERS_VARIABLE = "AUDIOEVAL_SYNTHESIS_WORKERS"
# what the forkserver imports before it forks any worker: this module first (it starts the watch that ends the
# server with the run, before seconds of imports), synthesis, and scipy.signal (the generators filter; imported
# once there, it is not imported again by each worker)
PRELOAD = ["audioeval.run.worker_processes", "audioeval.run.synthesis", "scipy.signal"]


def synthesis_workers() -> int:
    raw = os.environ.get(WORKERS_VARIABLE, "").strip()
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("%s=%r is not a number of processes: using the cores", WORKERS_VARIABLE, raw)
    if _main_is_a_script():
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
    return max(1, cores // max(1, local))


_GUARDED_MAIN = False  # set by `main_is_guarded`


def main_is_guarded() -> None:
    """Say that the main module does its work only under `if __name__ == "__main__":`, so worker processes
    may import it again: the `audioeval` command's script (pip writes it so) says it through cli.console().
    Believed only where the main file does hold that guard (a wrapper of one's own may call console() at its
    top level: each worker would run it again, and die)."""
    global _GUARDED_MAIN
    _GUARDED_MAIN = _has_main_guard(getattr(sys.modules.get("__main__"), "__file__", None))


def _has_main_guard(path: str | None) -> bool:
    """Whether the file's top level has an `if __name__ == "__main__":` block."""
    import ast

    try:
        with open(path or "", encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "__name__"
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__"
        ):
            return True
    return False


def _main_is_a_script() -> bool:
    """A worker process imports the main module again when it is a script file, which runs the script's
    code once more unless it is behind `if __name__ == "__main__":`. Without a say from the user
    (AUDIOEVAL_SYNTHESIS_WORKERS), such a run synthesizes on its own thread; `python -m`, the `audioeval`
    command (`main_is_guarded`) and interactive sessions use workers."""
    if _GUARDED_MAIN:
        return False
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(main, "__file__", None) is not None and (
        spec is None or not spec.name.endswith("__main__")
    )


def _exit_with_parent() -> None:
    """Exit when the parent process is gone: a run killed with SIGKILL leaves no process behind (one would
    hold the run's output pipes open, and its caller would wait for them forever)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.1)
        os._exit(0)

    threading.Thread(target=watch, name="audioeval-parent-watch", daemon=True).start()


def _quiet_worker() -> None:
    """A worker ignores Ctrl-C (the run handles it and stops the pool), exits with its parent and keeps the
    memory it frees."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    keep_freed_memory()


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> None:
    """Let this process reuse the memory it frees instead of handing it back to the system. Synthesis makes and
    drops numpy arrays of a few megabytes (a 10 s clip in float64 is 1.3 MB) all the time; past glibc's
    thresholds each is mapped and faulted in page by page again, which cost AnomalyDetect a fifth of its
    synthesis time (50,000 page faults per episode) in the kernel. Here freed memory up to 128 MB stays with
    the process, and only arrays from 32 MB are mapped on their own. Results do not change (nothing reads
    memory it has not written); where the C library has no mallopt (not glibc), nothing happens."""
    try:
        import ctypes
        import ctypes.util

        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 128 << 20)


def _in_forkserver() -> bool:
    """Whether this module is being preloaded by a multiprocessing forkserver (which outlives its parent)."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "main" and frame.f_code.co_filename.endswith("forkserver.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _exit_without_teardown() -> None:
    """The forkserver's last exit handler: it ends when the run does, and the interpreter's teardown of what it
    imported (datasets, scipy, pandas: 0.3-0.4 s on two cores) would hold the run's output pipes open that
    long after the run has exited. It has nothing to write or close."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


if _in_forkserver():  # the server the workers are forked from exits with the run, and so do they
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    atexit.register(_exit_without_teardown)  # registered after multiprocessing's own: runs first


_POOL: ProcessPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _worker_context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if hasattr(context, "set_forkserver_preload"):
        context.set_forkserver_preload(PRELOAD)
    return context


def start_forkserver() -> None:
    """Start the server the workers are forked from, without waiting for it: it spends a couple of seconds of
    CPU importing what synthesis needs, which the first worker would otherwise wait for with the run stopped.
    A run calls it before its own imports when it probably synthesizes (api/evaluate.py), so that the two
    overlap; otherwise the first job starts it."""
    if synthesis_workers() <= 0 or "forkserver" not in multiprocessing.get_all_start_methods():
        return
    _worker_context()
    from multiprocessing import forkserver

    forkserver.ensure_running()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """One pool per process, kept until `close_worker_pool` (the end of an `evaluate` call) or the exit."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE != workers or getattr(_POOL, "_broken", False):
            if _POOL is not None:
                _POOL.shutdown(wait=False, cancel_futures=True)
            context = _worker_context()
            _POOL = ProcessPoolExecutor(workers, mp_context=context, initializer=_quiet_worker)
            _POOL_SIZE = workers
        return _POOL


@atexit.register
def close_worker_pool(now: bool = False) -> None:
    """Stop the synthesis workers and the threads that feed them; the next run starts them again. `now` (the run
    failed or was interrupted): the episodes in progress are not waited for, their processes are stopped."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is None:
        return
    if now:
        processes = list((getattr(pool, "_processes", None) or {}).values())  # CPython's pool keeps them so
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)
