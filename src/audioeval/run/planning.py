"""Everything checked before a run sends its first request: the model's and judges' arguments, the tasks
(prepared, with their robustness copies), episode 0 of each rendered for the model (preflight), the
reference models, the report functions, and that every package the run's code imports is installed. What
the checks produced is the run's plan; nothing in it is checked again."""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.augment.plan import AugmentPlan, parse_augment
from audioeval.config.judge_roles import JudgeRole
from audioeval.config.registry import TaskRegistry
from audioeval.data.builders import EpisodeBuilder
from audioeval.errors import UsageError
from audioeval.models.base import Model, check_model_args
from audioeval.models.registry import get_model_class, use_backend_folders
from audioeval.results.reports import Report, resolve_reports
from audioeval.results.run_health import unjudged_warning
from audioeval.run.conditions import clean_tasks, with_conditions
from audioeval.run.episode_store import EpisodeStore, episode_key, store_cap_bytes
from audioeval.run.prepared import PreparedTask, preflight, prepare_tasks
from audioeval.run.progress import said_if_slow
from audioeval.run.reference_models import check_reference_models
from audioeval.run.requirements import check_installed, module_source
from audioeval.run.settings import RunConfig, episode_store_path
from audioeval.run.synthesis import FirstEpisodes

log = logging.getLogger("audioeval")


@dataclass
class RunPlan:
    registry: TaskRegistry
    tasks: list[PreparedTask]  # each clean task, followed by its degraded copies (--augment)
    group_names: list[str]  # the groups named or implied by --tasks
    augment: AugmentPlan | None
    model_class: type[Model]
    judge_classes: list[type[Model]]
    judge_roles: dict[str, list[JudgeRole]]  # judged task -> its roles (empty without --judge)
    reports: list[Report]  # resolved, each function once

    @property
    def clean_tasks(self) -> list[PreparedTask]:
        """The tasks as the benchmark defines them: what reports and reference models see."""
        return clean_tasks(self.tasks)

    def reference_tasks(self, cfg: RunConfig) -> list[PreparedTask]:
        """The tasks whose reference models are served beside the model: the clean ones, none when the run is
        asked to go without (`RunConfig.reference_models`)."""
        return self.clean_tasks if cfg.reference_models else []


def plan_run(cfg: RunConfig) -> RunPlan:
    use_backend_folders(cfg.include_path)
    if cfg.model_instance is not None:  # built by the caller: its arguments were its constructor's business
        model_class: type[Model] = type(cfg.model_instance)
    else:
        model_class = get_model_class(cfg.model)
        # arguments first: a typo must not wait for seconds of task preparation
        check_model_args(model_class, cfg.model_args)
    if cfg.gen_kwargs:
        model_class.check_gen_kwargs(cfg.gen_kwargs, "--gen_kwargs", cfg.model_args)
    judge_classes = check_judge_args(cfg.judge, cfg.judge_args)
    if cfg.asr is not None or cfg.asr_args:
        from audioeval.models.speech.asr import check_asr_args

        check_asr_args(cfg.asr, cfg.asr_args)
    registry = TaskRegistry.discover(cfg.include_path)
    task_names, group_names = registry.select(cfg.tasks)
    augment = parse_augment(cfg.augment, cfg.augment_target)
    tasks = prepare_tasks(
        registry,
        task_names,
        num_fewshot=cfg.num_fewshot,
        task_args=cfg.task_args,
        limit=cfg.limit,
        seed=cfg.seed,
        gen_kwargs=cfg.gen_kwargs,
    )
    tasks = with_conditions(tasks, augment)
    stored = stored_first_episodes(cfg, tasks)
    # the first episodes not stored are made by the worker processes while the checks below run
    to_make = [
        t for t in tasks if isinstance(t.builder, EpisodeBuilder) and t.indices and t.name not in stored
    ]
    storing = not cfg.no_cache and store_cap_bytes() > 0
    first = FirstEpisodes(to_make, {t.name for t in to_make if storing and episode_key(t) is not None})
    if to_make:  # preflight will wait for the workers: the backends' slow imports are done meanwhile
        import_ahead([model_class, *judge_classes])
    try:
        check_reference_models(clean_tasks(tasks))
        # the roles compiled when the tasks were discovered: the panel runs these very ones
        roles = (
            {t.name: registry.judge_roles[t.config.name] for t in tasks if t.config.judge}
            if cfg.judge
            else {}
        )
        reports = resolve_reports(registry, clean_tasks(tasks), group_names)
        plan = RunPlan(registry, tasks, group_names, augment, model_class, judge_classes, roles, reports)
        check_installed(code_of_run(cfg, plan))
        # seconds of synthesis on a cold cache: said, so that they do not pass in silence
        with said_if_slow(
            f"{len(tasks)} task(s): synthesizing the first episode of {len(to_make)} to check the prompts"
        ):
            preflight(tasks, model_class, cfg.model_args, stored, first.take)
    except BaseException:
        first.cancel()
        raise
    if not cfg.judge and (warning := unjudged_warning(tasks)):
        log.warning(warning)
    return plan


def import_ahead(classes: list[type[Model]]) -> threading.Thread | None:
    """Import what the backends declare in `Model.imports_ahead`, on a daemon thread (None: nothing to import).
    A module that fails to import is left to the backend, which imports it again when it is made and says
    what is wrong."""
    modules = list(dict.fromkeys(m for c in classes for m in c.imports_ahead))

    def run() -> None:
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001, S112 - reported by the backend itself
                continue

    if not modules:
        return None
    thread = threading.Thread(target=run, name="audioeval-backend-imports", daemon=True)
    thread.start()
    return thread


def stored_first_episodes(cfg: RunConfig, tasks: list[PreparedTask]) -> dict[str, dict[str, Any]]:
    """The first episode of each task as the episode store keeps it: preflight renders it instead of
    synthesizing it again (a warm run, a second model). Empty with --no_cache or a store that cannot be read."""
    if cfg.no_cache:
        return {}
    path = episode_store_path(cfg)
    if not path.is_file():
        return {}
    store = EpisodeStore(path, quiet=True)  # what is damaged, the run's own store says once
    try:
        found = {}
        for task in tasks:
            key = episode_key(task)
            if key is not None and task.indices:
                episode = store.get_many(key, task.indices[:1], task.episode).get(task.indices[0])
                if episode is not None:
                    found[task.name] = episode
        return found
    finally:
        store.close()


def check_judge_args(names: list[str], args: list[dict[str, Any]]) -> list[type[Model]]:
    """Each judge's backend arguments and sampling settings, checked before any task is prepared."""
    from audioeval.run.judging import JUDGE_SAMPLING_KEYS

    classes = []
    for i, (name, judge_args) in enumerate(zip(names, args, strict=True)):
        backend_args = {k: v for k, v in judge_args.items() if k != "id" and k not in JUDGE_SAMPLING_KEYS}
        sampling = {k: v for k, v in judge_args.items() if k in JUDGE_SAMPLING_KEYS}
        try:
            cls = get_model_class(name)
            check_model_args(cls, backend_args)
            cls.check_gen_kwargs(sampling, "--judge_args", backend_args)
        except Exception as err:
            message = str(err).replace("--model_args", "--judge_args")
            raise UsageError(f"--judge {name} (judge {i + 1}): {message}") from err
        classes.append(cls)
    return classes


def _file_of(fn: Callable[..., Any]) -> list[Path]:
    """The source file of a hook function (or of the module of a callable object)."""
    try:
        return [Path(inspect.getfile(inspect.unwrap(fn)))]
    except TypeError:
        source = module_source(getattr(fn, "__module__", "") or "")
        return [source] if source else []


def code_of_run(cfg: RunConfig, plan: RunPlan) -> dict[str, Iterable[Path]]:
    """What will run, by name, with its source files: for the preflight import check."""

    def files(modules: list[str]) -> list[Path]:
        return [f for f in (module_source(m) for m in modules) if f is not None]

    pieces: dict[str, Iterable[Path]] = {
        f"--model {cfg.model}": files(plan.model_class.code_modules(cfg.model_args))
    }
    for name, cls, args in zip(cfg.judge, plan.judge_classes, cfg.judge_args, strict=True):
        pieces[f"--judge {name}"] = files([*cls.code_modules(args), "audioeval.run.judging"])
    for task_name, roles in plan.judge_roles.items():
        for role in roles:
            what = f"verdict reader of judge role {role.name!r} of task {task_name}"
            pieces[what] = _file_of(role.read_verdict)
    for name in dict.fromkeys(n for t in plan.clean_tasks for n in t.config.reference_models):
        if name != cfg.model:
            pieces[f"reference model {name}"] = files(get_model_class(name).code_modules({}))
    for task in plan.tasks:
        pieces.update(task.source_files())
    for report in plan.reports:
        pieces[f"report {report.spec}"] = _file_of(report.function)
    return pieces
