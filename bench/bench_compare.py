"""How long `audioeval compare` takes on large runs: 5 runs x 36,000 samples (the nine AudioICL-Bench tasks x
k = 0, 1, 3, 5 x 1,000 episodes) with 10,000 resamples. Target (issue 29): <= 20 s on two cores.

    PYTHONPATH=src python bench/bench_compare.py [--runs 5] [--episodes 1000] [--resamples 10000] [--keep DIR]

The run folders are synthesized, shaped as real runs write them: results.json made by the core's own
aggregation (RunRecord.to_json, the audioicl_bench groups with their A2/A3 averages) and samples_<task>.jsonl
lines made by SampleRecord (messages with a text part and a clip per demonstration and the query, the
episode's metadata, scores). Each run is another "model": per episode a 0/1 accuracy drawn with its own skill.
The command is timed in this process (`audioeval.cli.main`), output to a file: wall seconds and the process's
CPU seconds (all its threads), with the machine's load average before and after (on a shared machine the wall
time follows the load; the CPU time does not).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np

from audioeval.config.registry import TaskRegistry
from audioeval.results.aggregate import aggregate_groups, aggregate_task
from audioeval.results.outputs import SampleLog, write_json
from audioeval.results.record import ModelRecord, RunRecord, Sections, TaskRecord
from audioeval.results.sample_record import SampleRecord
from audioeval.results.score_rows import ScoreRow
from audioeval.results.scoring import aggregations

GROUP = "audioicl_bench"
SHOTS = [0, 1, 3, 5]


class _Scorer:
    def aggregations(self, names: list[str]):  # the tasks' own rule: plain means
        return aggregations({}, names)


def _sha(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _messages(task: str, episode: int, k: int) -> list[dict]:
    content: list[dict] = [{"type": "text", "text": "Identify the hidden patterns and rules within the following "
                            "audio-label pairs and apply them to the final query.\n\n"}]  # fmt: skip
    for d in range(k):
        content.append({"type": "text", "text": f"[Demo {d + 1}] "})
        content.append({"type": "audio", "sha256": _sha(task, episode, "demo", d), "seconds": 10.0,
                        "sampling_rate": 16000})  # fmt: skip
        content.append({"type": "text", "text": f" Label: {(episode + d) % 8 + 1}\n"})
    content.append({"type": "text", "text": "[Query] "})
    content.append(
        {"type": "audio", "sha256": _sha(task, episode, "query"), "seconds": 10.0, "sampling_rate": 16000}
    )
    content.append({"type": "text", "text": " Label:"})
    return [{"role": "user", "content": content}]


def make_run(
    root: Path, model: str, skill: float, tasks: list[str], episodes: int, registry: TaskRegistry
) -> Path:
    run_dir = root / model / "2026-01-01T00-00-00"
    run_dir.mkdir(parents=True)
    rng = np.random.default_rng(abs(hash(model)) % 2**32)
    sections, summaries, configs = Sections(), {}, {}
    for task in tasks:
        log = SampleLog(run_dir, task, 0)
        rows, records = [], []
        for episode in range(episodes):
            target = str(episode % 8 + 1)
            for k in SHOTS:
                right = float(rng.random() < skill + 0.02 * k)
                scores = {"parse_failure_rate": 0.0, "accuracy": right}
                rows.append(ScoreRow(episode, k, scores, False, False, 10.0 * (k + 1)))
                records.append(SampleRecord(
                    task, episode, f"{task}-{episode:05d}", k,
                    {"task": task, "index": episode, "query_count": int(target), "sound": {"family": "bell"}},
                    _sha(model, task, episode, k), _messages(task, episode, k),
                    {"max_new_tokens": 64, "do_sample": False}, target if right else "0", None,
                    target if right else "0", target, False, scores, 10.0 * (k + 1), 0.01, False,
                ))  # fmt: skip
        log.write(records)
        log.close()
        SampleLog.merge(run_dir, task, 1)
        sections.results[task], summaries[task] = aggregate_task(task, SHOTS, rows, _Scorer(), 200, 0)
        config = registry.tasks[task].resolved()
        configs[task] = TaskRecord(_sha(task), 1, SHOTS, episodes, "", {**config, "template_texts": {}})
    sections.groups = aggregate_groups(registry, [GROUP, "audioicl_a2", "audioicl_a3"], summaries)
    record = RunRecord(
        sections, configs, ModelRecord(model, {}, {"model": model}, 1), None, None, 0, SHOTS, {}, None, 200, 1,
        {"audioeval": "bench"}, None, "2026-01-01T00:00:00", {}, [], [], [],
    )  # fmt: skip
    write_json(run_dir / "results.json", record.to_json())
    return run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="write the run folders here (default: a temporary folder)")
    args = parser.parse_args()
    from audioeval.cli import main as cli

    registry = TaskRegistry.discover()
    tasks = registry.leaf_tasks(GROUP)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        made = time.perf_counter()
        runs = [
            make_run(root, f"model{i}", 0.2 + 0.1 * i, tasks, args.episodes, registry)
            for i in range(args.runs)
        ]
        samples = sum(1 for run in runs for p in run.glob("samples_*.jsonl") for _ in p.open())
        size = sum(p.stat().st_size for run in runs for p in run.glob("samples_*.jsonl"))
        print(f"synthesized {len(runs)} runs, {samples:,} samples ({size / 1e6:.0f} MB of sample logs) in "
              f"{time.perf_counter() - made:.1f} s")  # fmt: skip
        out = root / "comparison.json"
        argv = ["compare", *map(str, runs), "--bootstrap_iters", str(args.resamples), "--format", "json",
                "--output", str(out)]  # fmt: skip
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        start, cpu = time.perf_counter(), time.process_time()
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = cli(argv)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        load_after = Path("/proc/loadavg").read_text().split()[:3]
        rows = len(json.loads(out.read_text())["rows"])
    assert code == 0, code
    print(f"audioeval compare: {args.runs} runs x {samples // args.runs:,} samples, {args.resamples:,} resamples, "
          f"{rows} rows: {seconds:.1f} s wall, {cpu:.1f} s CPU (target <= 20 s on two cores)")  # fmt: skip
    print(f"load average before: {' '.join(load_before)}; after: {' '.join(load_after)}")


if __name__ == "__main__":
    main()
