"""Harness overhead per sample (everything outside the model's generate call and outside audio synthesis)
with the `chance` model, peak memory as the request count grows, and lm-eval's evaluator with its dummy
model on the same number of requests.

    python bench/bench_harness_overhead.py [--requests 2001] [--sizes 1002,2001,5001,20001] \
        [--out bench/results/harness_overhead.json]

Targets: under 2 ms of overhead per sample (issue 2); peak RSS flat from 1,000 to 20,000 requests (issue 16:
every stage of the pipeline is bounded). Each measurement runs in a fresh subprocess so peak RSS belongs to
that size alone. Synthesis runs on a background thread beside the rest, so the overhead figure (busy time
minus synthesis and generate time) is a lower bound; the whole-run figure per sample is printed too.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy"
SHOTS = "0,1,3"


def measure_audioeval(n_requests: int) -> dict:
    """One run in this process: returns timing and peak RSS."""
    from audioeval.run.conductor import RunConfig, run_evaluation

    episodes = max(1, n_requests // len(SHOTS.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(
            tasks="toy_tones",
            model="chance",
            include_path=[str(TOY)],
            num_fewshot=[0, 1, 3],
            task_args={"n_episodes": episodes},
            batch_size=16,
            output_path=tmp,
            log_samples=True,
            no_cache=False,
            cache_dir=tmp,
            bootstrap_resamples=1000,
            show_progress=False,
        )
        started = time.perf_counter()
        output = run_evaluation(cfg)
        wall = time.perf_counter() - started
    timing = output["timing"]
    return {
        "requests": timing["samples"],
        "wall_seconds": round(wall, 3),
        "loop_overhead_ms_per_sample": timing["harness_overhead_ms_per_sample"],
        "synthesis_seconds": timing["synthesis_seconds"],
        "generate_seconds": timing["generate_seconds"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


LM_EVAL_TASK = """task: audioeval_overhead_probe
dataset_path: json
dataset_kwargs:
  data_files: {data}
test_split: train
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
metric_list:
  - metric: exact_match
"""


def measure_lm_eval(n_requests: int) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "docs.jsonl"
        data.write_text(
            "".join(
                json.dumps({"question": f"question {i}", "answer": "low"}) + "\n" for i in range(n_requests)
            )
        )
        (Path(tmp) / "probe.yaml").write_text(LM_EVAL_TASK.format(data=data))
        manager = TaskManager(include_path=tmp)
        started = time.perf_counter()
        simple_evaluate(
            model="dummy",
            tasks=["audioeval_overhead_probe"],
            task_manager=manager,
            bootstrap_iters=1000,
            log_samples=True,
        )
        wall = time.perf_counter() - started
    return {
        "requests": n_requests,
        "wall_seconds": round(wall, 3),
        "overhead_ms_per_sample": round(1000 * wall / n_requests, 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def in_subprocess(kind: str, n: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--single", kind, str(n)], capture_output=True, text=True, timeout=1800
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} run with {n} requests failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2001, help="requests for the headline comparison")
    parser.add_argument("--sizes", default="1002,2001,5001,20001", help="request counts for the memory curve")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "harness_overhead.json"))
    parser.add_argument("--single", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        kind, n = args.single[0], int(args.single[1])
        print(json.dumps(measure_audioeval(n) if kind == "audioeval" else measure_lm_eval(n)))
        return

    curve = [in_subprocess("audioeval", int(n)) for n in args.sizes.split(",")]
    headline = next((c for c in curve if c["requests"] == args.requests), None) or in_subprocess(
        "audioeval", args.requests
    )
    lm_eval = in_subprocess("lm_eval", headline["requests"])
    whole_ms = 1000 * headline["wall_seconds"] / headline["requests"]
    ratio = whole_ms / lm_eval["overhead_ms_per_sample"]
    print(f"{'requests':>9} {'overhead ms/sample':>19} {'peak RSS MB':>12}")
    for c in curve:
        print(f"{c['requests']:>9} {c['loop_overhead_ms_per_sample']:>19.3f} {c['peak_rss_mb']:>12.1f}")
    print(
        f"\naudioeval (chance, {headline['requests']} requests): {headline['loop_overhead_ms_per_sample']:.3f} ms/sample "
        f"harness overhead (target < 2 ms)"
    )
    print(
        f"lm-eval (dummy, {lm_eval['requests']} requests): {lm_eval['overhead_ms_per_sample']:.3f} ms/sample "
        "(whole evaluator wall time / requests; text only, no audio)"
    )
    print(f"audioeval whole run (setup included, synthesis and scoring too): {whole_ms:.3f} ms/sample")
    print(f"ratio audioeval / lm-eval, whole-run wall time per sample: {ratio:.3f}")
    growth = curve[-1]["peak_rss_mb"] / curve[0]["peak_rss_mb"]
    print(f"peak RSS growth from {curve[0]['requests']} to {curve[-1]['requests']} requests: {growth:.2f}x")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "audioeval": curve,
                "headline": headline,
                "lm_eval_dummy": lm_eval,
                "audioeval_whole_run_ms_per_sample": round(whole_ms, 4),
                "whole_run_ratio_vs_lm_eval": round(ratio, 3),
                "peak_rss_growth": round(growth, 3),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
