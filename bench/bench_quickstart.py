"""The README's quick start as a new user types it, on an empty cache, then again on the same cache.

    python bench/bench_quickstart.py [--limit 50] [--repeats 1] [--out bench/results/quickstart.json]

Targets (issue 24): the first run within 60 s on two cores after setup, a rerun on the same cache within
0.35 of the first run. Each run is a fresh `audioeval` command (the script beside this Python) with its own empty
$AUDIOEVAL_CACHE (speech, responses, episodes) and output folder, so nothing from an earlier run helps the
first one. Printed per run: wall seconds, CPU seconds (user + system of the run and every process under it:
the figure to read on a shared machine), the share of the cores that CPU fills over the wall time and the
load average before it, then the rerun/first ratio of each.

The run's synthesis workers are children of a multiprocessing forkserver that the run never waits for, so
their CPU reaches nobody's rusage unless this process adopts them: on Linux it becomes their reaper
(PR_SET_CHILD_SUBREAPER) and waits for every orphan after each run. Elsewhere the figure leaves them out,
and says so.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ORPHANS_TIMEOUT_S = 30.0  # the workers and the forkserver exit within a second of the run


def adopt_orphans() -> bool:
    """Become the reaper of this process's orphaned descendants (Linux): whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans() -> None:
    """Wait for every descendant left behind by the run (its forkserver, the workers it had not reaped), so
    that their CPU is in RUSAGE_CHILDREN."""
    deadline = time.monotonic() + ORPHANS_TIMEOUT_S
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            if time.monotonic() > deadline:
                sys.exit(
                    f"processes the run started were still alive {ORPHANS_TIMEOUT_S:.0f} s after it ended"
                )
            time.sleep(0.05)


def quick_start(limit: int, output: Path) -> list[str]:
    """The command as the README types it: the `audioeval` script beside this Python (`python -m audioeval`
    where it is not installed)."""
    script = Path(sys.executable).parent / "audioeval"
    return [
        *([str(script)] if script.is_file() else [sys.executable, "-m", "audioeval"]),
        "--tasks",
        "audioicl_bench",
        "--model",
        "dsp-oracle",
        "--limit",
        str(limit),
        "--output_path",
        str(output),
        "--log_samples",
        "--no_progress",
    ]


def timed(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"the quick start failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    busy = cpu / (wall * (os.cpu_count() or 1))
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cores_busy": round(busy, 3),
        "load_before": round(load, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=1, help="pairs of first run + rerun")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    adopted = adopt_orphans()
    if not adopted:
        print("(not Linux: the CPU figures leave out the synthesis workers)", flush=True)
    pairs = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="audioeval-quickstart-") as tmp:
            env = {
                **os.environ,
                "AUDIOEVAL_CACHE": str(Path(tmp) / "cache"),
                "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
            }
            cmd = quick_start(args.limit, Path(tmp) / "results")
            first = timed(cmd, env)
            rerun = timed(cmd, env)
        pair = {
            "first": first,
            "rerun": rerun,
            "ratio_wall": round(rerun["wall_s"] / first["wall_s"], 3),
            "ratio_cpu": round(rerun["cpu_s"] / first["cpu_s"], 3),
        }
        pairs.append(pair)
        print(
            f"[{repeat + 1}] first run {first['wall_s']:.1f} s wall, {first['cpu_s']:.1f} s CPU "
            f"({first['cores_busy']:.0%} of the cores, load {first['load_before']:.1f}); rerun {rerun['wall_s']:.1f} s wall, {rerun['cpu_s']:.1f} s CPU "
            f"(load {rerun['load_before']:.1f}); rerun/first {pair['ratio_wall']:.2f} wall, "
            f"{pair['ratio_cpu']:.2f} CPU",
            flush=True,
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {"limit": args.limit, "cores": os.cpu_count(), "workers_counted": adopted, "runs": pairs},
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
