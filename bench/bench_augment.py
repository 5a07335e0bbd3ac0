"""What `--augment` adds to episode synthesis at 16 kHz: time spent augmenting as a percentage of the time
spent synthesizing the same episodes, per source and transform. Target: noise, gain and filters add at most
20% with the default `--augment_target query`.

    PYTHONPATH=src python bench/bench_augment.py [--episodes 30] [--target query] [--sources audio_count,...]

Each source runs in a fresh process with an empty $AUDIOEVAL_CACHE, so synthesis is the first pass over the
episodes with every sound made from scratch (eSpeak NG included), as in a first run; augmentation is the
median of 3 passes over those episodes after one warm-up clip. Prints a markdown table (quoted in README.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SOURCES = {
    "audio_count": ("audioicl_bench", "audio_count"),
    "audio_count_hard": ("audioicl_bench", "audio_count_hard"),
    "audio_length": ("audioicl_bench", "audio_length"),
    "audio_operator": ("audioicl_bench", "audio_operator"),
    "morse_code": ("audioicl_bench", "morse_code"),
    "adu_general": ("adu_bench", "general"),
}
TRANSFORMS = (
    "noise_snr=10",
    "pink_noise_snr=10",
    "brown_noise_snr=10",
    "gain_db=-6",
    "lowpass_hz=2000",
    "telephone",
)


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def measure(source: str, episodes: int, target: str) -> str:
    from audioeval.augment.episode import augment_episode
    from audioeval.augment.plan import parse_augment
    from audioeval.data.builders import make_builder

    builder_name, config = SOURCES[source]
    builder = make_builder(builder_name, config, {"n_episodes": episodes, "sampling_rate": 16000})
    started = time.perf_counter()
    made = [builder.episode(i) for i in range(episodes)]
    synth = time.perf_counter() - started
    cells = []
    for flag in TRANSFORMS:
        condition = parse_augment([flag], target).conditions[0]
        augment_episode(made[0], condition, builder)  # builds the transform once
        took = statistics.median(
            _timed(lambda c=condition: [augment_episode(e, c, builder) for e in made]) for _ in range(3)
        )
        cells.append(f"{100 * took / synth:.0f}%")
    return f"| {source} | {1000 * synth / episodes:.1f} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--target", default="query", choices=["query", "demos", "all"])
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one source in this process
    args = parser.parse_args()
    if args.one:
        print(measure(args.one, args.episodes, args.target))
        return
    print(
        f"augmentation time as a share of synthesis time, {args.episodes} episodes, target={args.target}, 16 kHz\n"
    )
    print("| episodes of | synthesis ms/episode | " + " | ".join(TRANSFORMS) + " |")
    print("|---|---|" + "---|" * len(TRANSFORMS))
    for source in [s.strip() for s in args.sources.split(",") if s.strip()]:
        cmd = [
            sys.executable,
            __file__,
            "--one",
            source,
            "--episodes",
            str(args.episodes),
            "--target",
            args.target,
        ]
        with tempfile.TemporaryDirectory(prefix="bench-augment-") as cache:
            env = {**os.environ, "AUDIOEVAL_CACHE": cache}
            row = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.strip()
        print(row, flush=True)


if __name__ == "__main__":
    main()
