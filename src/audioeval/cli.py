"""Command line: `audioeval --tasks ... --model ...` (lm-eval habits), plus `audioeval build`, `audioeval push`,
`audioeval push-results`, `audioeval corpora` and `audioeval view`.

Works the same under `python -m audioeval` and `accelerate launch -m audioeval`."""

from __future__ import annotations

import argparse
import atexit
import errno
import logging
import os
import shlex
import shutil
import sys
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from audioeval.augment.arguments import add_augment_arguments
from audioeval.errors import AudioEvalError, TasksUnscored, UsageError
from audioeval.kvargs import FlagParser
from audioeval.redact import RedactingFilter, redact_message, redact_text

if TYPE_CHECKING:  # the run's modules load only when a run starts: `--help` stays fast
    from audioeval.api.result import EvaluationResult

log = logging.getLogger("audioeval")


def _say_error(err: BaseException) -> None:
    """One write per message: the ranks of a launch share stderr, and print()'s separate write of the line end
    lets another rank's message land in the middle of the line."""
    sys.stderr.write(f"{_prefix()}error: {redact_message(str(err))}\n")
    sys.stderr.flush()


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _prefix() -> str:
    """ "audioeval: ", with the rank in a multi-process run so that every rank's messages can be told apart."""
    return f"audioeval [rank {_rank()}]: " if int(os.environ.get("WORLD_SIZE", "1")) > 1 else "audioeval: "


# exit codes: 2 = the run could not start or stopped on an error, 3 = it finished but a task got no answer at
# all or a judge endpoint went down
EXIT_ERROR, EXIT_UNSCORED, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 2, 3, 130, 141


def run_parser() -> argparse.ArgumentParser:
    p = FlagParser(
        prog="audioeval",
        description="Evaluate audio-language models on the benchmarks under tasks/ (`--tasks list` shows them). "
        "Subcommands: `audioeval build ...` and `audioeval push ...` export datasets (see `audioeval build -h`); "
        "`audioeval view RUN_DIR` looks at and listens to a run (see `audioeval view -h`); `audioeval push-results "
        "RUN_DIR` publishes it on the Hub; `audioeval corpora` lists "
        "the real corpora the builders read and downloads them.",
    )
    p.add_argument(
        "--tasks", "-t", help="comma list of tasks or groups (required); `--tasks list` shows them all"
    )
    p.add_argument(
        "--model",
        "-m",
        help="model backend, e.g. hf, openai, vllm, cascade, chance; `--model list` shows them all, "
        "`--model NAME --model_args list` the arguments of one (default: the offline `chance` baseline, with a "
        "notice)",
    )
    p.add_argument("--model_args", "-a", default="", help="backend arguments: k=v,...; `list` shows them")
    p.add_argument("--num_fewshot", "-f", help="comma list of shot counts k (default: each task's own)")
    p.add_argument("--task_args", default="", help="task parameters: k=v,...; `list` shows them")
    p.add_argument("--limit", "-L", help="episodes per task: a count N, or a fraction such as 0.1")
    p.add_argument(
        "--batch_size",
        "-b",
        type=int,
        help="requests per generate() call of a local backend (hf, vllm; results do not depend on it; "
        "the API backend keeps its own number in flight instead); default 1",
    )
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
    p.add_argument(
        "--asr",
        help="ASR of a spoken answer (models that answer in speech): pocketsphinx (offline default, a smoke-test "
        "ASR), openai (an /audio/transcriptions endpoint), hf (a local Whisper checkpoint), none",
    )
    p.add_argument("--asr_args", default="", help="ASR arguments: key=value,... (e.g. model=whisper-1)")
    p.add_argument(
        "--spoken_text",
        default="asr",
        choices=["asr", "transcript"],
        help="the text of a spoken answer that is scored: its ASR (default, as benchmarks that convert audio answers to text do) or the model's transcript",
    )
    add_augment_arguments(p)
    p.add_argument("--verbosity", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument("--no_progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--full_table",
        action="store_true",
        help="print every metric with stderr and errors (the run folder's summary.md); default: the main "
        "metric per task and k with its CI",
    )
    return p


def setup_logging(verbosity: str) -> None:
    level = getattr(logging, verbosity.upper(), logging.INFO)
    if _rank() != 0:
        level = max(level, logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_prefix().replace("%", "%%") + "%(message)s"))
    handler.addFilter(RedactingFilter())
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False
    for noisy in ("datasets", "evaluate", "transformers", "accelerate", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


#: flags of the command line alone: how the run's result is printed
CLI_ONLY_FLAGS = ("full_table",)


def cmd_run(argv: list[str]) -> int:
    """`audioeval --tasks ...`: the flags, as they are, to `audioeval.evaluate` (api/evaluate.py); then the
    table, where the results went and what went wrong, on rank 0."""
    args = run_parser().parse_args(argv)
    setup_logging(args.verbosity)
    listing = _listing(args)
    if listing is not None:
        print(listing)
        return 0
    from audioeval.api.evaluate import evaluate
    from audioeval.run.distributed import close_process_group

    options = {k: v for k, v in vars(args).items() if k not in CLI_ONLY_FLAGS}
    options["verbosity"] = None  # set up above, with the rank prefix
    try:
        result = evaluate(**options)
    finally:  # done or failed, nothing more goes between the processes: a live gloo group can abort the exit
        close_process_group()
    if _rank() != 0:
        return 0
    _say_outcome(result, full_table=args.full_table)
    return 0


def _listing(args: argparse.Namespace) -> str | None:
    """What `--model list`, `--model NAME --model_args list`, `--tasks list`, `--tasks NAMES --task_args list`
    and `--augment list` print; None for a run."""
    if args.model == "list":
        from audioeval.models.registry import listing, use_backend_folders

        use_backend_folders(args.include_path)
        return listing()
    if args.model_args.strip() == "list":
        from audioeval.api.evaluate import DEFAULT_MODEL
        from audioeval.models.registry import arguments_listing, use_backend_folders

        use_backend_folders(args.include_path)
        return arguments_listing(args.model or DEFAULT_MODEL)
    if not args.tasks:
        raise UsageError("--tasks is required: a comma list of tasks or groups (`--tasks list` shows them).")
    if args.tasks.strip() == "list":
        from audioeval.config.registry import TaskRegistry

        return TaskRegistry.discover(args.include_path).listing()
    if args.task_args.strip() == "list":
        from audioeval.config.registry import TaskRegistry

        return TaskRegistry.discover(args.include_path).parameter_listing(args.tasks)
    if "list" in args.augment:
        from audioeval.augment.plan import catalogue_listing

        return catalogue_listing()
    return None


def _say_outcome(result: EvaluationResult, full_table: bool = False) -> None:
    """The table, where the results went, then what went wrong; exit code 3 (TasksUnscored) when a task got no
    answer at all or a judge endpoint went down."""
    record = result.record
    print(redact_text(result.table if full_table else result.compact_table))
    if result.run_dir is not None:
        print(_where_results_went(result.run_dir, record.reports or [], full_table))
    sys.stdout.flush()
    if result.run_dir is None:
        log.info(
            "no --output_path given: nothing was written (no results.json, summary, reports or samples); the "
            "table above is all this run keeps. Run the same command with --output_path results (and "
            "--log_samples for every sample) to keep them; with the response cache no answer is asked again."
        )
    if result.resume_note:
        log.info(result.resume_note)
    for warning in record.warnings:
        log.warning(warning)
    if record.unscored_tasks:
        raise TasksUnscored(
            f"{len(record.unscored_tasks)} task(s) got no answer at all: {', '.join(record.unscored_tasks)} "
            "(see the warnings above); exit code 3."
        )
    if record.judges_down:
        raise TasksUnscored(
            f"judge endpoint(s) went down: {', '.join(record.judges_down)}; their remaining verdicts are "
            "missing (see the warnings above). Every model response is cached: rerun once they are back; exit code 3."
        )


def _where_results_went(run_dir: Path, reports: list[str], full_table: bool) -> str:
    """The files of the run, and the one command that opens it when it logged samples."""
    lines = [f"\nresults: {run_dir}/results.json"]
    if not full_table:
        lines.append(f"full table (every metric, stderr, errors): {run_dir}/summary.md")
    lines += [f"report: {path}" for path in reports]
    if any(run_dir.glob("samples_*.jsonl")):
        lines.append(
            f"\nlisten to the samples and browse the results: {_own_command()} view {shlex.quote(str(run_dir))}"
        )
    return "\n".join(lines)


def _own_command() -> str:
    """`audioeval` as a fresh shell can run it: the bare name when it is on PATH and is this installation's,
    else the path of this interpreter's `audioeval` script (`.venv/bin/audioeval` when the venv is not
    activated), else `<python> -m audioeval`."""
    script = Path(sys.executable).parent / "audioeval"
    on_path = shutil.which("audioeval")
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m audioeval"
    if on_path is not None and Path(on_path).resolve() == script.resolve():
        return "audioeval"
    try:
        shown = script.absolute().relative_to(Path.cwd())  # as the run folder is shown: from here
    except ValueError:
        shown = script.absolute()
    return shlex.quote(str(shown))


def _is_unwritable(err: OSError) -> bool:
    """Permission denied, a read-only file system or a full disk, on a named path."""
    return err.filename is not None and err.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC)


def _asks_for_tracebacks(argv: list[str]) -> bool:
    """`--verbosity DEBUG` as argparse reads it (`--verbosity=DEBUG`, an abbreviation such as `--verb DEBUG`;
    the last one given wins), known before any parser runs so that the parsers' own errors show theirs too."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, equals, rest = arg.partition("=")
        if len(name) > 2 and "--verbosity".startswith(name):
            value = rest if equals else (argv[i + 1] if i + 1 < len(argv) else None)
    return value == "DEBUG"


# what an interrupted command leaves behind, and how to go on
_INTERRUPTED = {
    "run": "interrupted. Responses received so far are in the response cache and the samples logged so far are "
    "on disk; run the same command again to resume.",
    "build": "build interrupted: its staging folder was removed and the output folder is as it was before; run "
    "the same command again to build from the start.",
    "corpora": "interrupted: a download under way was removed and its destination is as it was before; run the "
    "same command again to start over.",
    "push": "push interrupted: the Hub shows an upload only once its final commit is made, so run the same "
    "command again.",
    "view": "interrupted: an export under way is incomplete; run the same command again (it replaces the "
    "earlier export).",
}


def console() -> None:
    """The `audioeval` command (and `python -m audioeval`): main(), then the exit without the interpreter's
    teardown. The command's script, which pip writes, calls this under `if __name__ == "__main__":`, so the
    synthesis workers, which import the main module again, may be used (`main_is_guarded`)."""
    from audioeval.run.worker_processes import main_is_guarded

    main_is_guarded()
    exit_without_teardown(main())


def exit_without_teardown(code: int) -> NoReturn:
    """Exit with `code` as the interpreter would up to its teardown of every imported module (about 3,000 after
    a run, with datasets, pandas, pyarrow and matplotlib: 0.6-0.9 s of wall and CPU on the 2-core machine, after
    everything the command owns is written and closed): the atexit handlers run (logging's flush,
    multiprocessing's cleanup, a user's own), the standard streams are flushed, and the process exits. A thread
    still at work that is not a daemon gets the ordinary exit, which waits for it."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if any(not t.daemon for t in others) or run_exitfuncs is None:
        raise SystemExit(code)
    run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the process was started with the stream closed
                stream.flush()
        except BrokenPipeError:  # the reader left before the last output: exit as a shell tool does
            code = code or EXIT_BROKEN_PIPE
        except (OSError, ValueError):  # a stream already closed, or gone: nothing to flush to
            pass
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _asks_for_tracebacks(argv)
    try:
        if argv and argv[0] in ("build", "push"):
            from audioeval.data.hub import cmd_build, cmd_push

            setup_logging("DEBUG" if debug else "INFO")
            if argv[0] == "push":
                return cmd_push(argv[1:])
            from audioeval.api.leaderboard import leaderboard_tasks

            return cmd_build(argv[1:], leaderboard=leaderboard_tasks)
        if argv and argv[0] == "push-results":
            from audioeval.results.publish.cli import cmd_push_results

            setup_logging("DEBUG" if debug else "INFO")
            return cmd_push_results(argv[1:])
        if argv and argv[0] == "compare":
            from audioeval.results.compare.cli import cmd_compare

            setup_logging("DEBUG" if debug else "INFO")
            return cmd_compare(argv[1:])
        if argv and argv[0] == "corpora":
            from audioeval.data.corpora.cli import cmd_corpora

            setup_logging("DEBUG" if debug else "INFO")
            return cmd_corpora(argv[1:])
        if argv and argv[0] == "view":
            from audioeval.viewer.cli import cmd_view

            setup_logging("DEBUG" if debug else "INFO")
            return cmd_view(argv[1:])
        return cmd_run(argv)
    except TasksUnscored as err:
        _say_error(err)
        return EXIT_UNSCORED
    except AudioEvalError as err:
        # every rank prints its own error (prefixed with its rank); the others name the rank that failed
        if debug:  # the traceback's lines may quote a secret too (a URL, a --model_args string)
            sys.stderr.write(redact_message(traceback.format_exc()))
        _say_error(err)
        return EXIT_ERROR
    except BrokenPipeError:  # stdout's reader is gone (`audioeval ... | head`): stop as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at interpreter exit
        return EXIT_BROKEN_PIPE
    except OSError as err:
        if not _is_unwritable(err):
            raise
        # a library writing its cache under a read-only home (evaluate's and datasets' Hugging Face caches)
        if debug:
            sys.stderr.write(redact_message(traceback.format_exc()))
        _say_error(
            UsageError(
                f"cannot write {err.filename} ({err.strerror}): make that folder writable, or move the cache "
                "that holds it to a writable folder (HF_HOME for Hugging Face's caches, AUDIOEVAL_CACHE for "
                "audioeval's, --cache_dir for the response cache)."
            )
        )
        return EXIT_ERROR
    except KeyboardInterrupt:  # Ctrl-C; SIGTERM too where a command stages its output (data/destination.py)
        if _rank() == 0:
            command = argv[0] if argv and argv[0] in _INTERRUPTED else "run"
            print(f"\n{_prefix()}{_INTERRUPTED[command]}", file=sys.stderr)
        return EXIT_INTERRUPTED
