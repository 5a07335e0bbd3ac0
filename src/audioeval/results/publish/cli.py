"""`audioeval push-results RUN_DIR --repo_id ORG/NAME [--model_repo ORG/MODEL] [--dry_run DIR]`."""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from audioeval.data.destination import fresh_destination, written_through_staging
from audioeval.errors import UsageError
from audioeval.kvargs import FlagParser
from audioeval.results.publish.eval_results import FLAG, BenchmarkRepo, is_repo_id, resolve_benchmark_repos
from audioeval.results.publish.hub import Target, check_hub, upload
from audioeval.results.publish.run_folder import RunFolder, finished_run
from audioeval.results.publish.tree import DATASET, MODEL, Staged, stage

log = logging.getLogger("audioeval")


def push_results_parser() -> argparse.ArgumentParser:
    p = FlagParser(
        prog="audioeval push-results",
        description="Publish a finished run on the Hugging Face Hub: results.json, summary.md, the benchmark "
        "reports and one parquet file of per-sample details per task as a dataset repository with a card; "
        "with --model_repo also the model's evaluation results (.eval_results/*.yaml) as a pull request.",
    )
    p.add_argument("run_dir", help="the run folder (OUTPUT_PATH/<model>/<timestamp>/)")
    p.add_argument(
        "--repo_id",
        required=True,
        help="org/name of the dataset repository for the results (made if missing; token: `hf auth login` or "
        "HF_TOKEN)",
    )
    p.add_argument(
        "--model_repo",
        help="org/name of the evaluated model's repository: its .eval_results/ entries are opened there as a "
        "pull request",
    )
    p.add_argument(
        FLAG,
        help="the Hub dataset holding each benchmark (what `audioeval push` uploaded): ORG/NAME for a run of "
        "one benchmark, else BENCHMARK=ORG/NAME,...; default: the dataset the run read (--task_args dataset=)",
    )
    p.add_argument(
        "--dry_run",
        metavar="DIR",
        help="write the files that would be uploaded into DIR (dataset/ and model/) and upload nothing",
    )
    p.add_argument("--overwrite", action="store_true", help="with --dry_run: replace a non-empty DIR")
    p.add_argument("--private", action="store_true", help="make the results repository private if it is new")
    p.add_argument("--commit_message", default="Upload evaluation results (audioeval push-results)")
    return p


def _check_repo_id(flag: str, value: str | None) -> None:
    if value is not None and not is_repo_id(value):
        raise UsageError(f"{flag} {value!r}: expected org/name.")


def cmd_push_results(argv: list[str]) -> int:
    args = push_results_parser().parse_args(argv)
    _check_repo_id("--repo_id", args.repo_id)
    _check_repo_id("--model_repo", args.model_repo)
    if args.overwrite and not args.dry_run:
        raise UsageError("--overwrite replaces a --dry_run folder: add --dry_run DIR, or leave it out.")
    if args.benchmark_repo and not args.model_repo:
        raise UsageError(
            f"{FLAG} names the benchmark dataset of the model's evaluation results: add --model_repo ORG/MODEL."
        )
    destination = fresh_destination("--dry_run", Path(args.dry_run), args.overwrite) if args.dry_run else None
    run = finished_run(Path(args.run_dir))
    benchmarks: dict[str, BenchmarkRepo] = {}
    if args.model_repo:
        benchmarks = resolve_benchmark_repos(run.record, args.benchmark_repo, args.model_repo)
    if not run.samples:
        log.warning("the run logged no samples: results only; the per-sample details need --log_samples.")
    if destination is not None:
        staged = _dry_run(run, destination, args, benchmarks)
        print(_dry_run_summary(staged, args))
        return 0
    target = Target(
        args.repo_id,
        args.model_repo,
        list(dict.fromkeys(b.repo_id for b in benchmarks.values())),
        args.private,
        args.commit_message,
    )
    checked = check_hub(target)  # the token and the repositories first: no staging work for a push that fails
    with tempfile.TemporaryDirectory(prefix="audioeval-push-results-") as tmp:
        staged = stage(run, Path(tmp), args.repo_id, args.model_repo, benchmarks)
        done = upload(staged, target, checked)
    print(f"pushed {run.path} to {done.dataset_url} (commit {done.commit or 'unknown'})")
    if done.pr_url:
        print(f"evaluation results for {args.model_repo}: pull request {done.pr_url}")
    return 0


def _dry_run(
    run: RunFolder, destination: Path, args: argparse.Namespace, benchmarks: dict[str, BenchmarkRepo]
) -> Staged:
    """The files staged beside `destination` and renamed into place: a failure leaves nothing there."""
    with written_through_staging("--dry_run", destination, "push-results") as staging:
        staged = stage(run, staging, args.repo_id, args.model_repo, benchmarks)
    staged.root = destination
    return staged


def _dry_run_summary(staged: Staged, args: argparse.Namespace) -> str:
    samples = sum(d.rows for d in staged.details.values())
    lines = [
        f"wrote what push-results would upload into {staged.root} (nothing was uploaded):",
        f"  {staged.root / DATASET}/ -> dataset {args.repo_id}: {len(staged.dataset_files)} files "
        f"({len(staged.details)} details file(s), {samples} samples)",
    ]
    if args.model_repo:
        lines.append(
            f"  {staged.root / MODEL}/ -> pull request on {args.model_repo}: " + ", ".join(staged.model_files)
        )
    return "\n".join(lines)
