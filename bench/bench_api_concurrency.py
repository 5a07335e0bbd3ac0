"""How well the `openai` backend keeps a remote endpoint busy, measured at the server.

    PYTHONPATH=src python bench/bench_api_concurrency.py [--requests 2000] [--concurrency 8,32,128] \
        [--adu_variations 3] [--out bench/results/api_concurrency.json]

The project's fake OpenAI-compatible server runs in its own process and answers each request after a delay
spread over 0.2-1.0 s (fixed per prompt). For each number of requests in flight C:

- audioeval: `--tasks audioicl_audio_count --num_fewshot 0,1,3,5 --no_cache` in a fresh process;
- a plain client: the same episodes rendered into the same payloads, sent by asyncio + a semaphore of C
  (no cache, no scoring, no logging): the practical ceiling of one Python process on this machine.

Ideal throughput = C / mean delay; achieved = requests / (last reply - first arrival) at the server (the
generation span); the whole-run ratio divides by audioeval's own wall time instead (results.json), which
includes task preparation, metric loading and scoring. Targets (issue 16): >= 0.9 of ideal in the
generation span at 8, 32 and 128; >= 0.8 over the whole run at 32 with 2,000 requests.

ADU-Bench (built-in corpus, `variations_per_query` renderings of each query): the model and the judge are
two such servers. Model time = the run without a judge; judge time = the run with every model response
cached; both = a fresh run with the judge. Target: both <= 1.2 x max(model time, judge time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from audioeval.testing.fake_openai import throughput  # noqa: E402

TASK = "audioicl_audio_count"
SHOTS = [0, 1, 3, 5]


class ServerProcess:
    """python -m audioeval.testing.fake_openai in a child process (its own GIL)."""

    def __init__(self, reply: str | None = None) -> None:
        cmd = [sys.executable, "-m", "audioeval.testing.fake_openai", "--latency", "0.2,1.0"]
        if reply is not None:
            cmd += ["--reply", reply]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env()
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.base_url = json.loads(self.proc.stdout.readline())["base_url"]

    def timings(self) -> list[tuple[float, float, float]]:
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.proc.stdin.write("timings\n")
        self.proc.stdin.flush()
        return [tuple(t) for t in json.loads(self.proc.stdout.readline())]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


def child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_audioeval(args: list[str], out: Path) -> tuple[dict[str, Any], float, float]:
    """results.json, process wall seconds and process CPU seconds (startup included)."""
    started, cpu = time.perf_counter(), child_cpu_seconds()
    cmd = [sys.executable, "-m", "audioeval", *args, "--output_path", str(out), "--no_progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=3600)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"audioeval failed ({' '.join(args)}):\n{proc.stderr[-3000:]}")
    results = json.loads(next(out.glob("*/*/results.json")).read_text())
    return results, wall, child_cpu_seconds() - cpu


# --- audioeval and the plain client on AudioCount ------------------------------------------------------------
def audioeval_run(server: ServerProcess, concurrency: int, episodes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        model_args = f"model=bench,base_url={server.base_url},num_concurrent={concurrency}"
        args = ["--tasks", TASK, "--model", "openai", "--model_args", model_args]
        args += [
            "--num_fewshot",
            ",".join(map(str, SHOTS)),
            "--task_args",
            f"n_episodes={episodes}",
            "--no_cache",
        ]
        args += ["--bootstrap_iters", "1000"]
        results, process_wall, cpu = run_audioeval(args, Path(tmp))
    span = throughput(server.timings(), concurrency)
    wall = results["timing"]["wall_seconds"]
    whole = span["requests"] / wall / span["ideal_per_s"]
    return {
        "generation_span": span,
        "run_wall_seconds": wall,
        "process_wall_seconds": round(process_wall, 3),
        "process_cpu_seconds": round(cpu, 2),
        "whole_run_ratio": round(whole, 4),
        "endpoint": results["timing"].get("endpoints", {}).get("model"),
    }


def plain_client(base_url: str, concurrency: int, episodes: int) -> None:
    """The ceiling: render and send, nothing else (run in its own process by --plain)."""
    from openai import AsyncOpenAI

    from audioeval.config.registry import TaskRegistry
    from audioeval.models.openai_chat import completion_payload
    from audioeval.run.prepared import prepare_tasks

    registry = TaskRegistry.discover([])
    (task,) = prepare_tasks(
        registry,
        [TASK],
        num_fewshot=SHOTS,
        task_args={"n_episodes": episodes},
        limit=None,
        seed=0,
        gen_kwargs={},
    )

    async def main() -> None:
        client = AsyncOpenAI(api_key="x", base_url=base_url, max_retries=0, timeout=120)
        semaphore = asyncio.Semaphore(concurrency)

        async def send(payload: dict[str, Any]) -> None:
            try:
                await client.chat.completions.create(model="bench", **payload)
            finally:
                semaphore.release()

        sent = []
        for index in task.indices:
            for request, _target in task.requests_for(task.episode(index)):
                await semaphore.acquire()
                sent.append(asyncio.create_task(send(completion_payload(request, {}))))
        await asyncio.gather(*sent)
        await client.close()

    asyncio.run(main())


def plain_run(server: ServerProcess, concurrency: int, episodes: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--plain", server.base_url, str(concurrency), str(episodes)]
    cpu = child_cpu_seconds()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"plain client failed:\n{proc.stderr[-3000:]}")
    span = throughput(server.timings(), concurrency)
    return {"generation_span": span, "process_cpu_seconds": round(child_cpu_seconds() - cpu, 2)}


# --- ADU-Bench: model and judge overlapping ------------------------------------------------------------------
def adu_runs(variations: int, concurrency: int) -> dict[str, Any]:
    model, judge = ServerProcess(), ServerProcess(reply="Score: 7")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = ["--tasks", "adu_bench", "--task_args", f"variations_per_query={variations}"]
            base += [
                "--model",
                "openai",
                "--model_args",
                f"model=lalm,base_url={model.base_url},num_concurrent={concurrency}",
            ]
            base += ["--bootstrap_iters", "1000"]
            judged = [
                "--judge",
                "openai",
                "--judge_args",
                f"model=judge,base_url={judge.base_url},num_concurrent={concurrency}",
            ]
            cache = Path(tmp) / "cache"
            alone, *_ = run_audioeval([*base, "--cache_dir", str(cache)], Path(tmp) / "model")
            model.timings()
            judge_only, *_ = run_audioeval([*base, *judged, "--cache_dir", str(cache)], Path(tmp) / "judge")
            judge.timings()
            both, *_ = run_audioeval(
                [*base, *judged, "--cache_dir", str(Path(tmp) / "fresh")], Path(tmp) / "both"
            )
            model_span, judge_span = (
                throughput(model.timings(), concurrency),
                throughput(judge.timings(), concurrency),
            )
    finally:
        model.close()
        judge.close()

    def task_wall(results: dict[str, Any]) -> float:
        return round(sum(t["wall_seconds"] for t in results["timing"]["tasks"].values()), 3)

    walls = {
        "model_only": task_wall(alone),
        "judge_only": task_wall(judge_only),
        "model_and_judge": task_wall(both),
    }
    return {
        "samples": both["timing"]["samples"],
        "concurrency": concurrency,
        "task_wall_seconds": walls,
        "ratio_to_max": round(walls["model_and_judge"] / max(walls["model_only"], walls["judge_only"]), 4),
        "ratio_to_sum": round(walls["model_and_judge"] / (walls["model_only"] + walls["judge_only"]), 4),
        "model_span": model_span,
        "judge_span": judge_span,
        "endpoints": both["timing"].get("endpoints"),
    }


# ---------------------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="8,32,128")
    parser.add_argument("--adu_variations", type=int, default=3, help="0: skip the ADU-Bench measurement")
    parser.add_argument("--adu_concurrency", type=int, default=32)
    parser.add_argument("--skip_plain", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "api_concurrency.json"))
    parser.add_argument("--plain", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        plain_client(args.plain[0], int(args.plain[1]), int(args.plain[2]))
        return

    episodes = args.requests // len(SHOTS)
    report: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "task": TASK,
        "shots": SHOTS,
        "requests": episodes * len(SHOTS),
        "server_delay_s": [0.2, 1.0],
        "audioicl": {},
    }
    server = ServerProcess()
    try:
        for c in (int(x) for x in args.concurrency.split(",")):
            row = {"audioeval": audioeval_run(server, c, episodes)}
            if not args.skip_plain:
                row["plain_asyncio_semaphore"] = plain_run(server, c, episodes)
            report["audioicl"][str(c)] = row
            ours = row["audioeval"]
            plain = row.get("plain_asyncio_semaphore", {}).get("generation_span", {}).get("ratio")
            plain_cpu = row.get("plain_asyncio_semaphore", {}).get("process_cpu_seconds")
            print(
                f"C={c:>3}: audioeval {ours['generation_span']['ratio']:.3f} of ideal in the generation span, "
                f"{ours['whole_run_ratio']:.3f} over the whole run ({ours['run_wall_seconds']:.1f} s, "
                f"{ours['process_cpu_seconds']:.1f} CPU s); plain asyncio+semaphore "
                f"{plain if plain is not None else 'n/a'} ({plain_cpu} CPU s)",
                flush=True,
            )
    finally:
        server.close()
    if args.adu_variations:
        adu = adu_runs(args.adu_variations, args.adu_concurrency)
        report["adu_bench"] = adu
        w = adu["task_wall_seconds"]
        print(
            f"ADU-Bench, {adu['samples']} samples at {adu['concurrency']} in flight: model alone {w['model_only']:.1f} s, "
            f"judge alone {w['judge_only']:.1f} s, together {w['model_and_judge']:.1f} s = "
            f"{adu['ratio_to_max']:.2f} x the larger (target <= 1.2), {adu['ratio_to_sum']:.2f} x the sum"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
