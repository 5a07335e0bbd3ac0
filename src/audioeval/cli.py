"""Command line: `audioeval --tasks ... --model ...` (lm-eval habits), plus `audioeval build` and `audioeval push`.

Works the same under `python -m audioeval` and `accelerate launch -m audioeval`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback

from audioeval.errors import AudioEvalError, UsageError
from audioeval.kvargs import parse_kv

log = logging.getLogger("audioeval")


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _shots(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"expected a comma list of integers such as 0,1,3,5, got {text!r}"
        ) from err
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers such as 0,1,3,5, got {text!r}")
    return values


def run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="audioeval",
        description="Evaluate audio-language models on ALICE, AudioICL-Bench and ADU-Bench. "
        "Subcommands: `audioeval build ...` and `audioeval push ...` export datasets (see `audioeval build -h`).",
    )
    p.add_argument(
        "--tasks", "-t", required=True, help="comma list of tasks or groups; `--tasks list` shows them all"
    )
    p.add_argument("--model", "-m", help="model backend, e.g. hf, openai, vllm, cascade, chance, dsp-oracle")
    p.add_argument("--model_args", "-a", default="", help="backend arguments: key=value,key2=value2")
    p.add_argument(
        "--num_fewshot", "-f", type=_shots, help="comma list of shot counts k (default: each task's own)"
    )
    p.add_argument("--task_args", default="", help="task parameters: key=value,... (validated per task)")
    p.add_argument("--limit", "-L", help="episodes per task: a count N, or a fraction such as 0.1")
    p.add_argument("--batch_size", "-b", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="seed for episode generation, bootstrap and `chance`")
    p.add_argument("--output_path", "-o", help="results go to OUTPUT_PATH/<model>/<timestamp>/")
    p.add_argument("--log_samples", "-s", action="store_true", help="write samples_<task>.jsonl")
    p.add_argument("--include_path", action="append", default=[], help="extra folder of task YAML files")
    p.add_argument("--gen_kwargs", default="", help="generation settings: max_new_tokens=64,temperature=0")
    p.add_argument(
        "--cache_dir", help="response cache folder (default: $AUDIOEVAL_CACHE or ~/.cache/audioeval)"
    )
    p.add_argument("--no_cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument(
        "--bootstrap_iters", type=int, default=10_000, help="bootstrap resamples for 95%% CIs (0: off)"
    )
    p.add_argument(
        "--judge", action="append", default=[], help="judge backend(s), e.g. openai; repeat or comma-separate"
    )
    p.add_argument(
        "--judge_args", action="append", default=[], help="judge arguments, one per --judge, key=value,..."
    )
    add_augment_arguments(p)
    p.add_argument("--verbosity", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--no_progress", action="store_true", help="hide progress bars")
    return p


def add_augment_arguments(p: argparse.ArgumentParser) -> None:
    """--augment and --augment_target, shared by runs and `audioeval build`."""
    p.add_argument(
        "--augment",
        action="append",
        default=[],
        metavar="NAME[=LEVEL,...]",
        help="degrade the clips with a transform (repeat to chain; several levels make a sweep, each "
        "evaluated beside the clean run), e.g. noise_snr=30,20,10,0; `--augment list` shows them all",
    )
    p.add_argument(
        "--augment_target",
        default="query",
        help="which clips --augment degrades: query (default), demos or all",
    )


def setup_logging(verbosity: str) -> None:
    level = getattr(logging, verbosity.upper(), logging.INFO)
    if _rank() != 0:
        level = max(level, logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("audioeval: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False
    for noisy in ("datasets", "evaluate", "transformers", "accelerate", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def cmd_run(argv: list[str]) -> int:
    args = run_parser().parse_args(argv)
    setup_logging(args.verbosity)
    if args.batch_size < 1:
        raise UsageError(f"--batch_size must be at least 1, got {args.batch_size}.")
    if args.tasks.strip() == "list":
        from audioeval.registry import TaskRegistry

        print(TaskRegistry.discover(args.include_path).listing())
        return 0
    if "list" in args.augment:
        from audioeval.augment.plan import catalogue_listing

        print(catalogue_listing())
        return 0
    if not args.model:
        from audioeval.models import model_names

        raise UsageError(
            "--model is required. Available: "
            + ", ".join(model_names())
            + " (`chance` and the baselines need no download)."
        )
    from audioeval.run import RunConfig, run_evaluation

    judges = [j.strip() for spec in args.judge for j in spec.split(",") if j.strip()]
    judge_args = [parse_kv(a, "--judge_args") for a in args.judge_args]
    if judge_args and len(judge_args) not in (1, len(judges)):
        raise UsageError(f"--judge_args: give one per --judge ({len(judges)}), or one shared by all.")
    if len(judge_args) == 1 and len(judges) > 1:
        judge_args = judge_args * len(judges)
    cfg = RunConfig(
        tasks=args.tasks,
        model=args.model,
        model_args=parse_kv(args.model_args, "--model_args"),
        num_fewshot=args.num_fewshot,
        task_args=parse_kv(args.task_args, "--task_args"),
        limit=args.limit,
        batch_size=args.batch_size,
        seed=args.seed,
        output_path=args.output_path,
        log_samples=args.log_samples,
        include_path=args.include_path,
        gen_kwargs=parse_kv(args.gen_kwargs, "--gen_kwargs"),
        cache_dir=args.cache_dir,
        no_cache=args.no_cache,
        bootstrap_resamples=args.bootstrap_iters,
        judge=judges,
        judge_args=judge_args or [{} for _ in judges],
        show_progress=not args.no_progress,
        augment=args.augment,
        augment_target=args.augment_target,
    )
    output = run_evaluation(cfg)
    if output is not None:
        print(output["table"])
        if "run_dir" in output:
            print(f"\nresults: {output['run_dir']}/results.json")
            for path in output.get("reports") or []:
                print(f"report: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "DEBUG" in argv
    try:
        if argv and argv[0] in ("build", "push"):
            from audioeval.hub import cmd_build, cmd_push

            setup_logging("DEBUG" if debug else "INFO")
            return cmd_build(argv[1:]) if argv[0] == "build" else cmd_push(argv[1:])
        return cmd_run(argv)
    except AudioEvalError as err:
        if _rank() == 0:
            if debug:
                traceback.print_exc()
            print(f"audioeval: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if _rank() == 0:
            print(
                "\naudioeval: interrupted. Responses received so far are in the response cache and the samples "
                "logged so far are on disk; run the same command again to resume.",
                file=sys.stderr,
            )
        return 130
