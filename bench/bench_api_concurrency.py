"""How well the `openai` backend keeps a fast remote endpoint busy, and what each request costs the client.

    PYTHONPATH=src python bench/bench_api_concurrency.py [--requests 2000] [--concurrency 8,32,128] \
        [--repeats 3] [--adu_variations 3] [--out bench/results/api_concurrency.json]

The project's fake OpenAI-compatible server runs in its own process (`python -m audioeval.testing.fake_openai
--latency 0.2,1.0`) and answers each request after a delay spread over 0.2-1.0 s (fixed per prompt). For each
number of requests in flight C, `--repeats` times:

- audioeval: `--tasks audioicl_audio_count --num_fewshot 0,1,3,5 --no_cache` in a fresh process
  (payloads up to ~2.5 MB, 1.4 MB on average);
- the plain SDK client: the same episodes rendered into the same payloads, sent by `openai.AsyncOpenAI` with an
  asyncio semaphore of C (no cache, no scoring, no logging), in its own process.

Ideal throughput = C / mean delay; achieved = requests / (last reply - first arrival) at the server (the
generation span). The whole-run ratio divides by audioeval's own wall time instead (results.json), which
includes task preparation, metric loading and scoring. CPU per request is the client process's CPU time
(user + system, all threads, sampled from /proc every 20 ms) over the generation span divided by the requests:
the steady state, without interpreter start-up and task preparation. The server process's CPU per request is
reported beside it: on a 2-core machine the two share the cores.

Stages: in one process, the same requests (50 episodes) go through each step on its own, timed in CPU
time (the best of three) and divided by the requests: synthesis (the episodes), rendering, WAV and base64 (once
per clip: an episode's demos recur at every k), hashing (each clip's SHA-256, made once by AudioClip.from_array
from the PCM16 bytes it makes anyway, so taken out of the synthesis figure; the request's content key), body
(JsonBody with the encodings spliced in), HTTP (aiohttp against a zero-delay server in another process, C in
flight) and parsing. The SDK line sends the same requests with `chat.completions.create` (its JSON, HTTP and
parsing together) after building the payload dicts (`completion_payload`, base64 as str).

Targets (issue 22): >= 0.9 of ideal at 32, >= 0.8 at 128 in flight; steady-state client CPU <= 5 ms per
request. ADU-Bench (built-in corpus, `variations_per_query` renderings of each query): the model and the judge
are two such servers. Model time = the run without a judge; judge time = the run with every model response
cached; both = a fresh run with the judge. Target (issue 16): both <= 1.2 x max(model time, judge time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from audioeval.testing.fake_openai import throughput  # noqa: E402

TASK = "audioicl_audio_count"
SHOTS = [0, 1, 3, 5]
STAGE_EPISODES = 50
REPEATS = 3  # stage timings: the best of three


class ServerProcess:
    """python -m audioeval.testing.fake_openai in a child process (its own GIL)."""

    def __init__(self, reply: str | None = None, latency: str = "0.2,1.0") -> None:
        cmd = [sys.executable, "-m", "audioeval.testing.fake_openai", "--latency", latency]
        if reply is not None:
            cmd += ["--reply", reply]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env()
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.base_url = json.loads(self.proc.stdout.readline())["base_url"]
        self.cpu = CpuMeter(self.proc.pid)

    def timings(self) -> list[tuple[float, float, float]]:
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.proc.stdin.write("timings\n")
        self.proc.stdin.flush()
        return [tuple(t) for t in json.loads(self.proc.stdout.readline())]

    def close(self) -> None:
        self.cpu.stop()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}


class CpuMeter:
    """A process's CPU seconds (user + system, all threads) sampled every 20 ms on a thread, on the clock of
    time.perf_counter (CLOCK_MONOTONIC, the server's clock too), so a span measured at the server can be
    read off: `between(t0, t1)`."""

    def __init__(self, pid: int) -> None:
        self.path = Path(f"/proc/{pid}/stat")
        self.tick = os.sysconf("SC_CLK_TCK")
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _read(self) -> float | None:
        try:
            fields = self.path.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / self.tick

    def _run(self) -> None:
        while not self._stop.is_set():
            cpu = self._read()
            if cpu is None:
                return
            self.samples.append((time.perf_counter(), cpu))
            self._stop.wait(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, when: float) -> float | None:
        """CPU seconds at `when`, interpolated between samples."""
        before = [s for s in self.samples if s[0] <= when]
        after = [s for s in self.samples if s[0] >= when]
        if not before or not after:
            return None
        (t0, c0), (t1, c1) = before[-1], after[0]
        return c0 if t1 == t0 else c0 + (c1 - c0) * (when - t0) / (t1 - t0)

    def between(self, start: float, end: float) -> float | None:
        a, b = self.at(start), self.at(end)
        return None if a is None or b is None else b - a


def span_figures(
    server: ServerProcess, client: CpuMeter, concurrency: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Throughput at the server, and client and server CPU per request over the generation span."""
    timings = server.timings()
    span = throughput(timings, concurrency)
    start, end = min(t[0] for t in timings), max(t[1] for t in timings)
    per_request = {}
    for name, meter in (("client", client), ("server", server.cpu)):
        cpu = meter.between(start, end)
        per_request[f"{name}_cpu_ms_per_request"] = (
            None if cpu is None else round(1000 * cpu / span["requests"], 3)
        )
    return span, per_request


def run_measured(cmd: list[str], timeout: float = 3600) -> tuple[subprocess.CompletedProcess, CpuMeter]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    meter = CpuMeter(proc.pid)
    stdout, stderr = proc.communicate(timeout=timeout)
    meter.stop()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), meter


def load_average() -> float:
    """The machine's 1-minute load average: what else wanted the cores while a run was measured."""
    return round(os.getloadavg()[0], 2)


# --- audioeval and the plain SDK client on AudioCount -----------------------------------------------------
def audioeval_run(server: ServerProcess, concurrency: int, episodes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        model_args = f"model=bench,base_url={server.base_url},num_concurrent={concurrency}"
        args = ["--tasks", TASK, "--model", "openai", "--model_args", model_args]
        args += ["--num_fewshot", ",".join(map(str, SHOTS)), "--task_args", f"n_episodes={episodes}"]
        args += ["--no_cache", "--bootstrap_iters", "1000", "--output_path", tmp, "--no_progress"]
        started, load = time.perf_counter(), load_average()
        proc, meter = run_measured([sys.executable, "-m", "audioeval", *args])
        process_wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"audioeval failed ({' '.join(args)}):\n{proc.stderr[-3000:]}")
        results = json.loads(next(Path(tmp).glob("*/*/results.json")).read_text())
    span, cpu = span_figures(server, meter, concurrency)
    wall = results["timing"]["wall_seconds"]
    samples = meter.samples
    return {
        "generation_span": span,
        **cpu,
        "run_wall_seconds": wall,
        "process_wall_seconds": round(process_wall, 3),
        "process_cpu_seconds": round(samples[-1][1] - samples[0][1], 2) if samples else None,
        "whole_run_ratio": round(span["requests"] / wall / span["ideal_per_s"], 4),
        "load_average": [load, load_average()],
        "endpoint": results["timing"].get("endpoints", {}).get("model"),
    }


def prepared_task(episodes: int) -> Any:
    from audioeval.config.registry import TaskRegistry
    from audioeval.run.prepared import prepare_tasks

    (task,) = prepare_tasks(
        TaskRegistry.discover([]),
        [TASK],
        num_fewshot=SHOTS,
        task_args={"n_episodes": episodes},
        limit=None,
        seed=0,
        gen_kwargs={},
    )
    return task


def plain_client(base_url: str, concurrency: int, episodes: int) -> None:
    """The comparison line: render and send with the SDK, nothing else (run in its own process by --plain)."""
    from openai import AsyncOpenAI

    from audioeval.models.openai_chat import completion_payload

    task = prepared_task(episodes)

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
    load = load_average()
    proc, meter = run_measured(cmd)
    if proc.returncode != 0:
        raise SystemExit(f"plain client failed:\n{proc.stderr[-3000:]}")
    span, cpu = span_figures(server, meter, concurrency)
    return {"generation_span": span, **cpu, "load_average": [load, load_average()]}


# --- per-stage costs ----------------------------------------------------------------------------------------
def stages(episodes: int, concurrency: int) -> dict[str, Any]:
    """CPU ms per request of each step, on the same requests (run in its own process by --stages)."""
    import hashlib

    from openai import AsyncOpenAI

    from audioeval.audio.wav import encode_wav, to_pcm16
    from audioeval.models.api.http import HttpEndpoint, endpoint_url_and_headers
    from audioeval.models.openai_chat import completion_payload, parse_reply, request_body
    from audioeval.types import b64encode  # pybase64's where installed (the api extra), else the stdlib's

    def timed(work: Any) -> tuple[Any, float]:
        """The work's result and its CPU seconds, the best of REPEATS runs (the machine is shared)."""
        best = None
        for _ in range(REPEATS):
            started = time.process_time()
            out = work()
            spent = time.process_time() - started
            best = spent if best is None else min(best, spent)
        return out, best

    task = prepared_task(episodes * (REPEATS + 1))
    cost: dict[str, float] = {}
    slices = iter([task.indices[i * episodes : (i + 1) * episodes] for i in range(REPEATS + 1)])
    [task.episode(i) for i in next(slices)[:5]]  # warm: imports, sound banks
    eps, cost["synthesis"] = timed(
        lambda: [task.episode(i) for i in next(slices)]
    )  # fresh episodes each time
    pairs, cost["rendering"] = timed(lambda: [p for e in eps for p in task.requests_for(e)])
    requests = [r for r, _ in pairs]
    clips = list({id(c): c for r in requests for c in r.clips}.values())
    wavs, cost["wav"] = timed(lambda: [encode_wav(c.samples, c.sampling_rate) for c in clips])
    _, cost["base64"] = timed(lambda: [b64encode(w) for w in wavs])
    wavs.clear()
    identity = {"model": "openai", "endpoint_model": "bench"}

    pcm = [to_pcm16(c.samples) for c in clips]
    _, hashing_clips = timed(lambda: [hashlib.sha256(p.data).hexdigest() for p in pcm])
    pcm.clear()
    _, hashing_keys = timed(lambda: [r.content_key(identity) for r in requests])
    cost["synthesis"] -= hashing_clips  # from_array hashes each clip's PCM16 bytes as it makes them
    cost["hashing"] = hashing_clips + hashing_keys
    for c in clips:
        c.wav_base64  # noqa: B018 - the encodings, made (and timed) above
    bodies, cost["body"] = timed(lambda: [request_body("bench", r, {}) for r in requests])
    body_mb = sum(b.size for b in bodies) / len(bodies) / 1e6

    server = ServerProcess(latency="0,0")
    try:
        url, headers = endpoint_url_and_headers("x", server.base_url, "chat/completions")
        http = HttpEndpoint(url, headers, concurrency, 120.0)

        async def send_all(send: Any, items: list[Any]) -> tuple[list[Any], float]:
            semaphore = asyncio.Semaphore(concurrency)

            async def one(item: Any) -> Any:
                async with semaphore:
                    return await send(item)

            await asyncio.gather(*(one(i) for i in items[:concurrency]))  # connections open, warm
            out, best = [], None
            for _ in range(REPEATS):
                started = time.process_time()
                out = await asyncio.gather(*(one(i) for i in items))
                spent = time.process_time() - started
                best = spent if best is None else min(best, spent)
            return out, best

        async def ours() -> tuple[list[Any], float]:
            try:
                return await send_all(http.post, bodies)
            finally:
                await http.aclose()

        replies, cost["http"] = asyncio.run(ours())
        _, cost["parsing"] = timed(lambda: [parse_reply(json.loads(r.data)) for r in replies])
        bodies.clear()
        replies.clear()

        payloads, sdk_payloads = timed(lambda: [completion_payload(r, {}) for r in requests])

        async def sdk() -> tuple[list[Any], float]:
            client = AsyncOpenAI(api_key="x", base_url=server.base_url, max_retries=0, timeout=120)

            async def create(payload: dict[str, Any]) -> Any:
                return await client.chat.completions.create(model="bench", **payload)

            try:
                return await send_all(create, payloads)
            finally:
                await client.close()

        _, sdk_create = asyncio.run(sdk())
    finally:
        server.close()
    n = len(requests)
    ours_ms = {k: round(1000 * v / n, 3) for k, v in cost.items()}
    client_stages = ("wav", "base64", "hashing", "body", "http", "parsing")
    return {
        "requests": n,
        "clips_per_request": round(sum(len(r.clips) for r in requests) / n, 2),
        "distinct_clips_per_request": round(len(clips) / n, 2),
        "body_mb_mean": round(body_mb, 3),
        "concurrency": concurrency,
        "audioeval_ms_per_request": ours_ms,
        "audioeval_client_ms_per_request": round(sum(ours_ms[k] for k in client_stages), 3),
        "sdk_ms_per_request": {
            "payload_dicts": round(1000 * sdk_payloads / n, 3),
            "create (json, http, parsing)": round(1000 * sdk_create / n, 3),
        },
    }


# --- ADU-Bench: model and judge overlapping ------------------------------------------------------------------
def adu_runs(variations: int, concurrency: int) -> dict[str, Any]:
    model, judge = ServerProcess(), ServerProcess(reply="Score: 7")

    def run(args: list[str], out: Path) -> dict[str, Any]:
        cmd = [sys.executable, "-m", "audioeval", *args, "--output_path", str(out), "--no_progress"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"audioeval failed ({' '.join(args)}):\n{proc.stderr[-3000:]}")
        return json.loads(next(out.glob("*/*/results.json")).read_text())

    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = ["--tasks", "adu_bench", "--task_args", f"variations_per_query={variations}"]
            base += ["--model", "openai", "--bootstrap_iters", "1000"]
            base += ["--model_args", f"model=lalm,base_url={model.base_url},num_concurrent={concurrency}"]
            judged = ["--judge", "openai"]
            judged += ["--judge_args", f"model=judge,base_url={judge.base_url},num_concurrent={concurrency}"]
            cache = Path(tmp) / "cache"
            alone = run([*base, "--cache_dir", str(cache)], Path(tmp) / "model")
            model.timings()
            judge_only = run([*base, *judged, "--cache_dir", str(cache)], Path(tmp) / "judge")
            judge.timings()
            both = run([*base, *judged, "--cache_dir", str(Path(tmp) / "fresh")], Path(tmp) / "both")
            model_span = throughput(model.timings(), concurrency)
            judge_span = throughput(judge.timings(), concurrency)
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
def spread(values: list[float | None]) -> dict[str, Any]:
    known = [v for v in values if v is not None]
    if not known:
        return {"median": None, "min": None, "max": None, "runs": values}
    return {"median": statistics.median(known), "min": min(known), "max": max(known), "runs": values}


def shown(s: dict[str, Any], digits: int = 2) -> str:
    if s["median"] is None:
        return "n/a"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ratio": spread([r["generation_span"]["ratio"] for r in runs]),
        "client_cpu_ms_per_request": spread([r["client_cpu_ms_per_request"] for r in runs]),
        "server_cpu_ms_per_request": spread([r["server_cpu_ms_per_request"] for r in runs]),
        "load_average": spread([r["load_average"][0] for r in runs]),
        **(
            {"whole_run_ratio": spread([r["whole_run_ratio"] for r in runs])}
            if "whole_run_ratio" in runs[0]
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="8,32,128")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--adu_variations", type=int, default=3, help="0: skip the ADU-Bench measurement")
    parser.add_argument("--adu_concurrency", type=int, default=32)
    parser.add_argument("--skip_plain", action="store_true")
    parser.add_argument("--skip_stages", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "api_concurrency.json"))
    parser.add_argument("--plain", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--stages", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain:
        plain_client(args.plain[0], int(args.plain[1]), int(args.plain[2]))
        return
    if args.stages:
        print(json.dumps(stages(*args.stages)))
        return

    episodes = args.requests // len(SHOTS)
    levels = [int(x) for x in args.concurrency.split(",")]
    report: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_before": os.getloadavg()},
        "task": TASK,
        "shots": SHOTS,
        "requests": episodes * len(SHOTS),
        "server_delay_s": [0.2, 1.0],
        "repeats": args.repeats,
    }
    if not args.skip_stages:
        cmd = [sys.executable, __file__, "--stages", str(STAGE_EPISODES), str(max(levels))]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"stage measurement failed:\n{proc.stderr[-3000:]}")
        report["stages"] = json.loads(proc.stdout)
        s = report["stages"]
        print(
            "stages, CPU ms per request: "
            + ", ".join(f"{k} {v:.2f}" for k, v in s["audioeval_ms_per_request"].items())
            + f"; client stages together {s['audioeval_client_ms_per_request']:.2f}; SDK: "
            + ", ".join(f"{k} {v:.2f}" for k, v in s["sdk_ms_per_request"].items()),
            flush=True,
        )
    runs: dict[int, dict[str, list[dict[str, Any]]]] = {c: {"audioeval": [], "plain_sdk": []} for c in levels}
    server = ServerProcess()
    try:
        for repeat in range(args.repeats):
            for c in levels:
                ours = audioeval_run(server, c, episodes)
                runs[c]["audioeval"].append(ours)
                line = (
                    f"run {repeat + 1}, C={c:>3}, load {ours['load_average'][0]:.1f}: audioeval "
                    f"{ours['generation_span']['ratio']:.3f} of ideal, "
                    f"{ours['client_cpu_ms_per_request']} ms CPU/request "
                    f"(server {ours['server_cpu_ms_per_request']}), whole run {ours['whole_run_ratio']:.3f}"
                )
                if not args.skip_plain:
                    plain = plain_run(server, c, episodes)
                    runs[c]["plain_sdk"].append(plain)
                    line += (
                        f"; plain SDK {plain['generation_span']['ratio']:.3f}, "
                        f"{plain['client_cpu_ms_per_request']} ms CPU/request"
                    )
                print(line, flush=True)
    finally:
        server.close()
    report["audioicl"] = {}
    for c in levels:
        row: dict[str, Any] = {"audioeval": summarize(runs[c]["audioeval"]), "runs": runs[c]}
        if runs[c]["plain_sdk"]:
            row["plain_sdk"] = summarize(runs[c]["plain_sdk"])
        report["audioicl"][str(c)] = row
        ours, plain = row["audioeval"], row.get("plain_sdk")
        print(
            f"C={c:>3}, median (min-max) of {args.repeats}: audioeval {shown(ours['ratio'])} of ideal, "
            f"{shown(ours['client_cpu_ms_per_request'], 1)} ms CPU/request, whole run "
            f"{shown(ours['whole_run_ratio'])}"
            + (
                f"; plain SDK {shown(plain['ratio'])}, {shown(plain['client_cpu_ms_per_request'], 1)} ms"
                if plain
                else ""
            )
            + f"; server {shown(ours['server_cpu_ms_per_request'], 1)} ms CPU/request"
            + f"; load average {shown(ours['load_average'], 1)}",
            flush=True,
        )
    if args.adu_variations:
        adu = adu_runs(args.adu_variations, args.adu_concurrency)
        report["adu_bench"] = adu
        w = adu["task_wall_seconds"]
        print(
            f"ADU-Bench, {adu['samples']} samples at {adu['concurrency']} in flight: model alone {w['model_only']:.1f} s, "
            f"judge alone {w['judge_only']:.1f} s, together {w['model_and_judge']:.1f} s = "
            f"{adu['ratio_to_max']:.2f} x the larger (target <= 1.2), {adu['ratio_to_sum']:.2f} x the sum"
        )
    report["machine"]["load_after"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
