"""`audioeval.evaluate(...)`: one evaluation run from Python, with the command line's options as keyword
arguments (the CLI is a thin layer over this function: `audioeval --tasks x --limit 5` calls
`evaluate(tasks="x", limit="5", ...)`), returning a typed result.

    import audioeval

    result = audioeval.evaluate(tasks=["my_task"], model="chance", limit=20, num_fewshot=[0, 3])
    result.results["my_task"]["3-shot"]["accuracy"]     # value, stderr, ci95, n, failures

`model` is a backend name (with `model_args`), or a model object: an instance of `audioeval.Model` written
around a torch module the caller holds (a training loop evaluates the weights it has, nothing on disk).
Called again and again in one process it gives identical results for identical weights and leaves no thread,
socket, child process or open file behind. Under `accelerate launch` it uses the process group that is
already there (each rank evaluates its slice) and every rank gets the same result; only rank 0 writes files.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from audioeval.api.result import EvaluationResult
from audioeval.errors import AudioEvalError, UsageError
from audioeval.kvargs import parse_kv

if TYPE_CHECKING:  # loaded once the options are checked: a wrong flag is reported before numpy loads
    from audioeval.models.base import Model
    from audioeval.run.conductor import RunOutcome
    from audioeval.run.settings import RunConfig

log = logging.getLogger("audioeval")

DEFAULT_MODEL = "chance"
# lm-eval defaults its model too: the documented one-liner runs as typed, on an offline baseline
NO_MODEL_NOTICE = (
    f"no --model given: running the offline `{DEFAULT_MODEL}` baseline (a uniform draw from each task's labels). "
    "Pick a real model with e.g. --model hf --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct (or openai, vllm; "
    "see README.md, Models)."
)
DEFAULT_RESAMPLES = 10_000  # = audioeval.results.stats.DEFAULT_RESAMPLES (a test keeps them equal)
SEED_MAX = 2**32 - 1  # what every seeded library takes (numpy's legacy RandomState, torch, random)
SPOKEN_TEXTS = ("asr", "transcript")

Flag = Mapping[str, Any] | str | None


def evaluate(
    tasks: str | Sequence[str],
    model: str | Model | None = None,
    model_args: Flag = None,
    num_fewshot: int | Sequence[int] | str | None = None,
    task_args: Flag = None,
    limit: int | float | str | None = None,
    batch_size: int | None = None,
    seed: int = 0,
    output_path: str | os.PathLike[str] | None = None,
    log_samples: bool = False,
    include_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    gen_kwargs: Flag = None,
    cache_dir: str | os.PathLike[str] | None = None,
    no_cache: bool = False,
    bootstrap_iters: int = DEFAULT_RESAMPLES,
    judge: str | Sequence[str] | None = None,
    judge_args: Flag | Sequence[Flag] = None,
    asr: str | None = None,
    asr_args: Flag = None,
    spoken_text: str = "asr",
    augment: str | Sequence[str] | None = None,
    augment_target: str | None = None,
    verbosity: str | None = None,
    no_progress: bool = False,
) -> EvaluationResult:
    """Evaluate `model` on `tasks`; the keyword arguments are the command line's flags (README, Command line).

    Differences from the command line, all for use inside Python: lists are lists (`tasks=["a", "b"]`,
    `num_fewshot=[0, 1]`; the CLI's comma strings work too), argument maps are dicts
    (`model_args={"pretrained": "..."}`; `"k=v,..."` strings work too); `model` may be a model object, whose
    answers are never cached (its weights may change between calls: episodes and verdicts still are);
    `log_samples` without `output_path` keeps the samples in the result only;
    `verbosity` leaves the logging configuration alone unless given. Errors are `audioeval.AudioEvalError`s
    whose message names the flag of the same name."""
    if verbosity is not None:
        _set_verbosity(verbosity)
    cfg = run_config(
        tasks=tasks, model=model, model_args=model_args, num_fewshot=num_fewshot, task_args=task_args,
        limit=limit, batch_size=batch_size, seed=seed, output_path=output_path, log_samples=log_samples,
        include_path=include_path, gen_kwargs=gen_kwargs, cache_dir=cache_dir, no_cache=no_cache,
        bootstrap_iters=bootstrap_iters, judge=judge, judge_args=judge_args, asr=asr, asr_args=asr_args,
        spoken_text=spoken_text, augment=augment, augment_target=augment_target, no_progress=no_progress,
    )  # fmt: skip
    return run(cfg)


def run(cfg: RunConfig) -> EvaluationResult:
    """The run `cfg` asks for, on every rank of the process group (the one there already, if any); every rank
    gets rank 0's result."""
    from audioeval.run.worker_processes import close_worker_pool, start_forkserver

    if _probably_synthesizes(cfg):
        start_forkserver()  # its imports run on another core while this process imports and plans
    # before the run's heavy modules load: a misspelt name is reported in well under a second
    check_names(cfg)
    from audioeval.run.conductor import conduct
    from audioeval.run.distributed import init_topology

    scratch = None
    if cfg.log_samples and cfg.output_path is None:  # the samples are kept in the result only
        scratch = tempfile.mkdtemp(prefix="audioeval-samples-")
        cfg.output_path = scratch

    def finish(outcome: RunOutcome) -> EvaluationResult:
        result = EvaluationResult.of(outcome, cfg.log_samples)
        if scratch is not None:
            result.keep_samples_in_memory()
        return result

    failed = True
    try:
        result = conduct(cfg, init_topology(keep_group=True), finish)
        failed = False
        return result
    finally:
        # a call leaves no thread or worker process behind (the next starts its own); a failed one does not
        # wait for the episodes in progress
        close_worker_pool(now=failed)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _probably_synthesizes(cfg: RunConfig) -> bool:
    """Whether the run will likely synthesize episodes, told before its heavy modules load: no episode store to
    read them from (--no_cache, or none in the cache folder yet). The run decides for itself later, knowing its
    tasks; a wrong guess costs only the idle server's imports, on another core."""
    from audioeval.run.settings import episode_store_path

    return cfg.no_cache or not episode_store_path(cfg).is_file()


def check_names(cfg: RunConfig) -> None:
    """The model's and the tasks' names (and `--include_path`), before anything heavy loads."""
    from audioeval.config.registry import TaskRegistry
    from audioeval.models.registry import backends, get_model_class, use_backend_folders

    if cfg.model_instance is None:
        use_backend_folders(cfg.include_path)
        if cfg.model not in backends() and ":" not in cfg.model:
            get_model_class(cfg.model)  # raises, with the close matches
    TaskRegistry.discover(cfg.include_path).select(cfg.tasks)


# ---- options -------------------------------------------------------------------------------------------------
def run_config(
    *,
    tasks: str | Sequence[str],
    model: str | Model | None,
    model_args: Flag,
    num_fewshot: int | Sequence[int] | str | None,
    task_args: Flag,
    limit: int | float | str | None,
    batch_size: int | None,
    seed: int,
    output_path: str | os.PathLike[str] | None,
    log_samples: bool,
    include_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    gen_kwargs: Flag,
    cache_dir: str | os.PathLike[str] | None,
    no_cache: bool,
    bootstrap_iters: int,
    judge: str | Sequence[str] | None,
    judge_args: Flag | Sequence[Flag],
    asr: str | None,
    asr_args: Flag,
    spoken_text: str,
    augment: str | Sequence[str] | None,
    augment_target: str | None,
    no_progress: bool,
) -> RunConfig:
    """Every option checked and turned into the run's settings: wrong values whatever the tasks are an error
    here, before anything is loaded."""
    notices = [] if model is not None else [NO_MODEL_NOTICE]
    instance = _model_object(model)
    args = _kv(model_args, "--model_args")
    if instance is not None and args:
        raise UsageError(
            "--model_args: a model given as an object is built already; pass its arguments to its constructor."
        )
    judges = [j.strip() for spec in _names(judge) for j in spec.split(",") if j.strip()]
    judge_maps = [_kv(a, "--judge_args") for a in _judge_args_list(judge_args)]
    _check_judge_counts(judges, judge_maps)
    if len(judge_maps) == 1 and len(judges) > 1:
        judge_maps = judge_maps * len(judges)
    _check_numbers(batch_size, bootstrap_iters, seed)
    if instance is not None:
        batch_size = _adopt(instance, batch_size, seed)
    augments = _names(augment)
    _check_speech_and_augment(asr, asr_args, spoken_text, augments, augment_target)
    from audioeval.run.settings import RunConfig

    return RunConfig(
        tasks=",".join(_names(tasks)) if not isinstance(tasks, str) else tasks,
        model=_model_name(instance) if instance is not None else (model or DEFAULT_MODEL),  # type: ignore[arg-type]
        model_instance=instance,
        model_args=args,
        num_fewshot=shot_list(num_fewshot),
        task_args=_kv(task_args, "--task_args"),
        limit=None if limit is None else str(limit),
        batch_size=batch_size or 1,
        seed=seed,
        output_path=None if output_path is None else str(output_path),
        log_samples=bool(log_samples),
        include_path=[str(p) for p in _paths(include_path)],
        gen_kwargs=_kv(gen_kwargs, "--gen_kwargs"),
        cache_dir=None if cache_dir is None else str(cache_dir),
        no_cache=bool(no_cache),
        bootstrap_resamples=bootstrap_iters,
        judge=judges,
        judge_args=judge_maps or [{} for _ in judges],
        show_progress=not no_progress,
        augment=augments,
        augment_target=augment_target,
        asr=asr,
        asr_args=_kv(asr_args, "--asr_args"),
        spoken_text=spoken_text,
        notices=notices,
    )


def _check_numbers(batch_size: Any, bootstrap_iters: Any, seed: Any) -> None:
    if batch_size is not None and (
        not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1
    ):
        raise UsageError(f"--batch_size must be at least 1 (an integer), got {batch_size!r}.")
    if not isinstance(bootstrap_iters, int) or isinstance(bootstrap_iters, bool) or bootstrap_iters < 0:
        raise UsageError(
            f"--bootstrap_iters must be 0 (no confidence intervals) or more resamples, got {bootstrap_iters!r}."
        )
    check_seed(seed)


def check_seed(seed: Any) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise UsageError(f"--seed must be an integer from 0 to {SEED_MAX} (2**32-1), got {seed!r}.")


def shot_list(value: int | Sequence[int] | str | None) -> list[int] | None:
    """--num_fewshot as a list of shot counts: `0,1,3,5`, 3 or [0, 1]."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            values = [int(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise UsageError(
                f"--num_fewshot: expected a comma list of integers such as 0,1,3,5, got {value!r}."
            ) from None
    elif isinstance(value, int):
        values = [value]
    else:
        values = list(value)
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise UsageError(f"--num_fewshot: expected non-negative integers such as 0,1,3,5, got {value!r}.")
    return values


def _check_judge_counts(judges: list[str], judge_args: list[dict[str, Any]]) -> None:
    """--judge_args pairs with --judge: one per judge, or one shared by all of them."""
    if judge_args and not judges:
        raise UsageError(
            "--judge_args given without --judge: name the judge backend(s) with --judge, e.g. "
            "--judge openai --judge_args model=gpt-4o-mini."
        )
    if len(judge_args) not in (0, 1, len(judges)):
        raise UsageError(
            f"--judge_args given {len(judge_args)} times for {len(judges)} judge(s): give one per --judge, "
            "in the same order, or one shared by all."
        )


def _check_speech_and_augment(
    asr: str | None, asr_args: Flag, spoken_text: str, augment: list[str], augment_target: str | None
) -> None:
    """Flags that only mean something beside another flag say so instead of being ignored."""
    if asr is not None:
        from audioeval.models.speech.asr import check_asr_name

        check_asr_name(asr)
    if asr_args and asr is None:
        raise UsageError(
            "--asr_args given without --asr: name the ASR with --asr (pocketsphinx, openai, hf), e.g. "
            "--asr openai --asr_args model=whisper-1."
        )
    if spoken_text not in SPOKEN_TEXTS:
        raise UsageError(f"--spoken_text must be one of {', '.join(SPOKEN_TEXTS)}, got {spoken_text!r}.")
    from audioeval.augment.plan import parse_augment

    parse_augment(augment, augment_target)  # the transforms and their levels, and the target beside them


def _model_object(model: str | Model | None) -> Model | None:
    """A model given as an object must honour the model contract (audioeval.Model)."""
    if model is None or isinstance(model, str):
        return None
    from audioeval.models.base import Model

    if isinstance(model, type) and issubclass(model, Model):
        raise UsageError(
            f"--model: got the class {model.__name__}; pass a model object, an instance of it "
            f"(model={model.__name__}(...)), or a backend name."
        )
    if not isinstance(model, Model):
        raise UsageError(
            f"--model: got a {type(model).__name__} object; a model object must be an instance of a subclass of "
            "audioeval.Model implementing generate(self, requests) -> list[audioeval.Response] (one per request, "
            "in order), or pass a backend name such as 'hf' or 'openai' (docs/python_api.md)."
        )
    if not callable(getattr(model, "generate", None)):
        raise UsageError(
            f"--model: {type(model).__name__}.generate is not a method; the model contract is "
            "generate(self, requests) -> list[audioeval.Response] (docs/python_api.md)."
        )
    return model


def _adopt(model: Model, batch_size: int | None, seed: int) -> int:
    """A model object takes the run's batch size when one is given (else keeps its own) and the run's seed
    when it has none; the run records what the model has."""
    if batch_size is not None or not isinstance(getattr(model, "batch_size", None), int):
        model.batch_size = batch_size or 1
    if not isinstance(getattr(model, "seed", None), int):
        model.seed = seed
    return model.batch_size


def _model_name(model: Model) -> str:
    return model.name or type(model).__name__


def _kv(value: Flag, flag: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        return parse_kv(value, flag)
    if isinstance(value, Mapping):
        return dict(value)
    raise UsageError(f"{flag}: expected a dict or a 'key=value,...' string, got {type(value).__name__}.")


def _judge_args_list(value: Flag | Sequence[Flag]) -> list[Flag]:
    if value is None:
        return []
    if isinstance(value, str | Mapping):
        return [value]
    return list(value)


def _names(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _paths(value: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    return [os.fspath(v) for v in value]


def _set_verbosity(verbosity: str) -> None:
    level = logging.getLevelName(str(verbosity).upper())
    if not isinstance(level, int):
        raise UsageError(f"--verbosity must be DEBUG, INFO, WARNING or ERROR, got {verbosity!r}.")
    log.setLevel(level)


__all__ = ["AudioEvalError", "evaluate"]
