"""Time the generation of AudioICL-Bench: every task's episodes (default: the nine tasks x 300 episodes,
max_shots 5), on one core, with the memory settings of a run's synthesis workers (`keep_freed_memory`).
Prints episodes/s and the synthesis real-time factor (seconds of audio produced per second of wall time) per
task, and writes the figures as JSON.

    python -m audioeval.benchmarks.audioicl_bench.bench_generation [--n_episodes 300] [--max_shots 5] [--configs a,b]
        [--include_ablation] [--serialize] [--reuse_speech_cache] [--output bench_audioicl_generation.json]

By default eSpeak NG utterances are synthesised into a fresh temporary cache, so the spoken-digit tasks are
timed cold; --reuse_speech_cache uses $AUDIOEVAL_CACHE (or ~/.cache/audioeval) instead.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, as the target is stated

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from audioeval.benchmarks.audioicl_bench.configs import configs_of  # noqa: E402
from audioeval.config.registry import TaskRegistry  # noqa: E402
from audioeval.run.worker_processes import keep_freed_memory  # noqa: E402


def benchmark_configs() -> list[str]:
    """The builder configs of the `audioicl_bench` group's tasks (the nine; the ablation is not in it)."""
    registry = TaskRegistry.discover([])
    names, _groups = registry.select("audioicl_bench")
    return [str(registry.tasks[name].builder_config) for name in names]


SPEECH = configs_of("operator")  # spoken digits (eSpeak NG), not procedural sources
TARGET_RTF = 200.0


def episode_audio_seconds(episode: dict) -> float:
    clips = (
        list(episode["context"])
        + [c for d in episode["demos"] for c in d["clips"]]
        + list(episode["query"]["clips"])
    )
    return sum(c["audio"].seconds for c in clips)


def time_config(config: str, n_episodes: int, max_shots: int, seed: int, serialize: bool) -> dict:
    from audioeval.data.builders import make_builder

    started = time.perf_counter()
    builder = make_builder(
        "audioicl_bench", config, {"n_episodes": n_episodes, "max_shots": max_shots, "seed": seed}
    )
    setup_s = time.perf_counter() - started
    audio_s, synth_s, serialize_s, cpu_s = 0.0, 0.0, 0.0, 0.0
    for index in range(n_episodes):
        t0, c0 = time.perf_counter(), time.process_time()
        episode = builder.episode(index)
        synth_s += time.perf_counter() - t0
        cpu_s += time.process_time() - c0
        audio_s += episode_audio_seconds(episode)
        if serialize:
            t0 = time.perf_counter()
            builder.info.features.encode_example(builder.to_row(episode))
            serialize_s += time.perf_counter() - t0
    return {
        "config": config,
        "episodes": n_episodes,
        "max_shots": max_shots,
        "setup_s": round(setup_s, 3),
        "synthesis_s": round(synth_s, 3),
        "cpu_s": round(cpu_s, 3),  # this process's CPU (eSpeak NG's helper process not counted)
        "cpu_ms_per_episode": round(1000 * cpu_s / n_episodes, 2),
        "serialize_s": round(serialize_s, 3) if serialize else None,
        "episodes_per_s": round(n_episodes / synth_s, 2),
        "audio_s": round(audio_s, 1),
        "audio_s_per_episode": round(audio_s / n_episodes, 2),
        "real_time_factor": round(audio_s / synth_s, 1),
        "procedural": config not in SPEECH,
        "meets_target": audio_s / synth_s >= TARGET_RTF,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n_episodes", type=int, default=300)
    p.add_argument("--max_shots", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--configs", help="comma list (default: the nine benchmark tasks)")
    p.add_argument("--include_ablation", action="store_true", help="also time morse_letter")
    p.add_argument("--serialize", action="store_true", help="also time encoding each episode as a Hub row")
    p.add_argument(
        "--reuse_speech_cache", action="store_true", help="keep the existing eSpeak NG cache (warm)"
    )
    p.add_argument("--output", default="bench_audioicl_generation.json", help="JSON file for the figures")
    args = p.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else benchmark_configs()
    if args.include_ablation and "morse_letter" not in configs:
        configs.append("morse_letter")
    keep_freed_memory()  # as a run's synthesis workers do
    tmp = None
    if not args.reuse_speech_cache:
        tmp = tempfile.TemporaryDirectory(prefix="audioicl-bench-cache-")
        os.environ["AUDIOEVAL_CACHE"] = tmp.name

    load_before = os.getloadavg()
    rows = []
    print(
        f"{'task':22s} {'episodes/s':>10s} {'audio s/ep':>10s} {'wall s':>8s} {'x real time':>12s} {'CPU ms/ep':>10s}"
    )
    for config in configs:
        row = time_config(config, args.n_episodes, args.max_shots, args.seed, args.serialize)
        rows.append(row)
        flag = "" if row["meets_target"] else f"  (below the {TARGET_RTF:.0f}x target)"
        print(
            f"{config:22s} {row['episodes_per_s']:10.2f} {row['audio_s_per_episode']:10.1f} "
            f"{row['synthesis_s']:8.1f} {row['real_time_factor']:11.0f}x {row['cpu_ms_per_episode']:10.1f}{flag}",
            flush=True,
        )
    total_audio = sum(r["audio_s"] for r in rows)
    total_wall = sum(r["synthesis_s"] for r in rows)
    procedural = [r for r in rows if r["procedural"]]
    summary = {
        "total_episodes": sum(r["episodes"] for r in rows),
        "total_synthesis_s": round(total_wall, 2),
        "total_cpu_s": round(sum(r["cpu_s"] for r in rows), 2),
        "total_audio_h": round(total_audio / 3600, 2),
        "overall_real_time_factor": round(total_audio / total_wall, 1),
        "procedural_min_real_time_factor": min((r["real_time_factor"] for r in procedural), default=None),
        "target_real_time_factor": TARGET_RTF,
        "speech_cache": "warm (reused)" if args.reuse_speech_cache else "cold (fresh temporary cache)",
        "load_average": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }
    print(
        f"total: {summary['total_episodes']} episodes, {summary['total_audio_h']} h of audio in "
        f"{summary['total_synthesis_s']:.0f} s ({summary['overall_real_time_factor']:.0f}x real time, "
        f"{summary['total_cpu_s']:.0f} s CPU, load {load_before[0]:.1f}-{os.getloadavg()[0]:.1f}); "
        f"slowest procedural task {summary['procedural_min_real_time_factor']}x"
    )
    import numpy
    import scipy

    report = {
        "summary": summary,
        "tasks": rows,
        "environment": {
            "python": sys.version.split()[0],
            "numpy": numpy.__version__,
            "scipy": scipy.__version__,
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "threads": os.environ.get("OMP_NUM_THREADS"),
        },
        "arguments": vars(args),
    }
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
