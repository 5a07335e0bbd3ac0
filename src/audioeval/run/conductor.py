"""One evaluation run, end to end: select and check tasks, load the model, evaluate, aggregate, write."""

from __future__ import annotations

import inspect
import logging
import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from audioeval.augment.plan import AugmentPlan, parse_augment
from audioeval.config.judge_roles import JudgeRole, load_roles
from audioeval.config.registry import TaskRegistry
from audioeval.errors import UsageError
from audioeval.models.base import Model, check_model_args
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.registry import create_model, get_model_class, use_backend_folders
from audioeval.redact import redact_args
from audioeval.results.aggregate import (
    aggregate_facets,
    aggregate_group_facets,
    aggregate_groups,
    aggregate_task,
    needs_facet_draws,
)
from audioeval.results.outputs import (
    SampleLog,
    git_commit,
    library_versions,
    make_run_dir,
    mark_failed,
    mark_finished,
    markdown_table,
    write_json,
)
from audioeval.results.reports import ReportContext, ReportHook, run_reports
from audioeval.results.run_health import failure_warnings, resume_note, unjudged_warning
from audioeval.results.score_rows import ScoreRow
from audioeval.results.stats import DEFAULT_RESAMPLES
from audioeval.run.cache import NoCache, ResponseCache
from audioeval.run.conditions import clean_tasks, condition_groups, with_conditions, write_robustness
from audioeval.run.distributed import Topology, collectively, init_topology
from audioeval.run.evaluator import EvalSettings, Evaluator, TaskOutcome, TaskTiming
from audioeval.run.prepared import PreparedTask, preflight, prepare_tasks
from audioeval.run.reference_models import check_reference_models, score_reference_models
from audioeval.run.requirements import check_installed, module_source

log = logging.getLogger("audioeval")


@dataclass
class RunConfig:
    tasks: str
    model: str = "chance"
    model_args: dict[str, Any] = field(default_factory=dict)
    num_fewshot: list[int] | None = None
    task_args: dict[str, Any] = field(default_factory=dict)
    limit: str | None = None
    batch_size: int = 1
    seed: int = 0
    output_path: str | None = None
    log_samples: bool = False
    include_path: list[str] = field(default_factory=list)
    gen_kwargs: dict[str, Any] = field(default_factory=dict)
    cache_dir: str | None = None
    no_cache: bool = False
    bootstrap_resamples: int = DEFAULT_RESAMPLES
    judge: list[str] = field(default_factory=list)
    judge_args: list[dict[str, Any]] = field(default_factory=list)
    show_progress: bool = True
    augment: list[str] = field(default_factory=list)  # --augment NAME[=LEVEL,...] (audioeval.augment)
    augment_target: str = "query"


def default_cache_dir() -> Path:
    return Path(os.environ.get("AUDIOEVAL_CACHE", Path.home() / ".cache" / "audioeval"))


def _model_display_name(model_name: str, model_args: dict[str, Any]) -> str:
    for key in ("pretrained", "model", "asr"):
        if key in model_args and model_args[key]:
            return f"{model_name}__{Path(str(model_args[key])).name}"
    return model_name


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
            raise UsageError(f"--judge {name} (judge {i + 1}): {err}") from err
        classes.append(cls)
    return classes


def _file_of(fn: Any) -> list[Path]:
    """The source file of a hook function (or of the module of a callable object)."""
    try:
        return [Path(inspect.getfile(inspect.unwrap(fn)))]
    except TypeError:
        source = module_source(getattr(fn, "__module__", "") or "")
        return [source] if source else []


def _code_of_run(
    cfg: RunConfig,
    judge_classes: list[type[Model]],
    tasks: list[PreparedTask],
    judge_roles: dict[str, list[JudgeRole]],
    reports: list[ReportHook],
) -> dict[str, Any]:
    """What will run, by name, with its source files: for the preflight import check."""

    def files(modules: list[str]) -> list[Path]:
        return [f for f in (module_source(m) for m in modules) if f is not None]

    pieces: dict[str, Any] = {
        f"--model {cfg.model}": files(get_model_class(cfg.model).code_modules(cfg.model_args))
    }
    for name, cls, args in zip(cfg.judge, judge_classes, cfg.judge_args, strict=True):
        pieces[f"--judge {name}"] = files([*cls.code_modules(args), "audioeval.run.judging"])
    for task_name, roles in judge_roles.items():
        for role in roles:
            pieces[f"verdict reader of judge role {role.name!r} of task {task_name}"] = _file_of(
                role.read_verdict
            )
    for task in tasks:
        pieces.update(task.source_files())
    for hook in reports:  # resolving them here also stops a misnamed report before any request
        pieces[f"report {hook.spec}"] = _file_of(hook.resolve())
    return pieces


def run_evaluation(cfg: RunConfig, topology: Topology | None = None) -> dict[str, Any] | None:
    """Returns the results dict on rank 0 (None on other ranks). `warnings` in it lists what went wrong
    without stopping the run; `unscored_tasks` the tasks that got no answer at all."""
    wall_start = time.perf_counter()
    use_backend_folders(cfg.include_path)
    model_cls = get_model_class(cfg.model)
    # arguments first: a typo must not wait for seconds of task preparation
    check_model_args(model_cls, cfg.model_args)
    if cfg.gen_kwargs:
        model_cls.check_gen_kwargs(cfg.gen_kwargs, "--gen_kwargs", cfg.model_args)
    judge_classes = check_judge_args(cfg.judge, cfg.judge_args)
    registry = TaskRegistry.discover(cfg.include_path)
    task_names, group_names = registry.select(cfg.tasks)
    plan = parse_augment(cfg.augment, cfg.augment_target)
    tasks = prepare_tasks(
        registry,
        task_names,
        num_fewshot=cfg.num_fewshot,
        task_args=cfg.task_args,
        limit=cfg.limit,
        seed=cfg.seed,
        gen_kwargs=cfg.gen_kwargs,
    )
    tasks = with_conditions(tasks, plan)
    preflight(tasks, model_cls, cfg.model_args)
    check_reference_models(tasks)
    # the judged tasks' roles, loaded once: their verdict readers are checked here, the panel then uses them
    judge_roles = {t.name: load_roles(t.config) for t in tasks if t.config.judge} if cfg.judge else {}
    reports = _report_hooks(registry, clean_tasks(tasks), group_names)
    check_installed(_code_of_run(cfg, judge_classes, tasks, judge_roles, reports))
    if not cfg.judge and (warning := unjudged_warning(tasks)):
        log.warning(warning)

    judge = None
    if cfg.judge:
        from audioeval.run.judging import JudgePanel  # late import: only runs that judge need it

        judge = JudgePanel.create(cfg.judge, cfg.judge_args, judge_roles)

    topology = topology or init_topology()
    run_dir = None
    if topology.is_main and cfg.output_path:
        run_dir = make_run_dir(cfg.output_path, _model_display_name(cfg.model, cfg.model_args))
    run_dir = topology.broadcast(run_dir)
    if cfg.log_samples and run_dir is None:
        raise UsageError("--log_samples needs --output_path to know where to write the samples.")
    try:
        output = _evaluate_and_write(
            cfg, topology, registry, tasks, group_names, judge, run_dir, wall_start, plan
        )
    except BaseException as err:
        if run_dir is not None and topology.is_main:
            mark_failed(
                run_dir, "interrupted" if isinstance(err, KeyboardInterrupt) else str(err) or repr(err)
            )
        raise
    finally:
        topology.close()
    return output


def _evaluate_and_write(
    cfg: RunConfig,
    topology: Topology,
    registry: TaskRegistry,
    tasks: list[PreparedTask],
    group_names: list[str],
    judge: Any,
    run_dir: Path | None,
    wall_start: float,
    plan: AugmentPlan | None = None,
) -> dict[str, Any] | None:
    cache: ResponseCache | NoCache
    cache = (
        NoCache()
        if cfg.no_cache
        else ResponseCache(Path(cfg.cache_dir or default_cache_dir()) / "responses.sqlite")
    )
    if judge is not None:
        judge.attach_cache(cache)

    outcomes: dict[str, list[TaskOutcome]] = {}
    endpoints: dict[str, Any] = {}
    model = None
    try:
        model = collectively(
            topology, lambda: _load_model(cfg, tasks), f"while loading --model {cfg.model}", gather=False
        )
        settings = EvalSettings(log_samples=cfg.log_samples, show_progress=cfg.show_progress)
        evaluator = Evaluator(tasks, model, cache, topology, run_dir or Path("."), settings, judge=judge)
        for task in tasks:
            # every rank reports its own failure; rank 0 says which rank failed
            gathered = collectively(
                topology, partial(evaluator.run_task, task), f"while evaluating task {task.name}"
            )
            if topology.is_main:
                outcomes[task.name] = gathered
        endpoints = _endpoint_figures(topology.gather(_endpoint_stats(model, judge)))
        topology.barrier()
        topology.close()  # the last collective: rank 0 goes on alone to aggregate and write
    finally:
        if model is not None:
            model.close()
        cache.close()
        if judge is not None:
            judge.close()

    if not topology.is_main:
        return None
    results: dict[str, Any] = {}
    task_summaries: dict[str, Any] = {}
    facets: dict[str, Any] = {}
    facet_summaries: dict[str, Any] = {}
    all_rows: dict[str, list[ScoreRow]] = {}
    timings: dict[str, Any] = {}
    total = TaskTiming()
    for task in tasks:
        gathered = outcomes[task.name]
        rows = [row for outcome in gathered for row in outcome.rows]
        task_timing = TaskTiming()
        for outcome in gathered:
            task_timing.add(outcome.timing)
        total.add(task_timing)
        task_timing.wall_s = gathered[0].timing.wall_s
        if cfg.log_samples and run_dir is not None:
            SampleLog.merge(run_dir, task.name, topology.world_size)
        per_k, summaries = aggregate_task(
            task.name, task.shots, rows, task.scorer, cfg.bootstrap_resamples, cfg.seed
        )
        results[task.name] = per_k
        task_summaries[task.name] = summaries
        if task.config.facets:
            facets[task.name], facet_summaries[task.name] = aggregate_facets(
                task.name,
                task.shots,
                rows,
                task.scorer,
                task.config.facets,
                cfg.bootstrap_resamples,
                cfg.seed,
                keep_draws=needs_facet_draws(registry, group_names, task.name),
            )
        all_rows[task.name] = rows
        timings[task.name] = _timing_block(task_timing)
    groups = aggregate_groups(registry, group_names, task_summaries)
    groups.update(
        condition_groups(plan, lambda g, s: aggregate_groups(registry, g, s), group_names, task_summaries)
    )
    facets.update(
        aggregate_group_facets(
            registry, group_names, facet_summaries, all_rows, cfg.bootstrap_resamples, cfg.seed
        )
    )
    references = score_reference_models(
        clean_tasks(tasks),
        registry,
        group_names,
        cfg.model,
        results,
        groups,
        cfg.bootstrap_resamples,
        cfg.seed,
    )
    wall = time.perf_counter() - wall_start
    total.wall_s = wall
    judges = judge.describe() if judge is not None else None
    warnings, unscored = failure_warnings(all_rows, judges, cache.damage)
    output: dict[str, Any] = {
        "results": results,
        "groups": groups,
        "facets": facets,
        "reference_models": references,
        "configs": {
            t.name: {
                "hash": t.config.content_hash(),
                "version": t.config.version,
                "shots": t.shots,
                "n_episodes": len(t.indices),
                "builder_file": builder_file(t.builder),
                "config": t.config.resolved(),
                **({"dataset": revision} if (revision := t.dataset_revision) else {}),
                **({"augment": t.augment.record()} if t.augment is not None else {}),
            }
            for t in tasks
        },
        "model": {
            "name": cfg.model,
            "model_args": redact_args(cfg.model_args),
            "identity": model.identity,
            "batch_size": cfg.batch_size,
        },
        "judges": judges,
        "augment": plan.record() if plan is not None else None,
        "seed": cfg.seed,
        "num_fewshot": cfg.num_fewshot,
        "task_args": cfg.task_args,
        "limit": cfg.limit,
        "bootstrap_resamples": cfg.bootstrap_resamples,
        "world_size": topology.world_size,
        "versions": library_versions(),
        "git_commit": git_commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "timing": {**_timing_block(total), "endpoints": endpoints, "tasks": timings},
        "warnings": warnings,
        "unscored_tasks": unscored,
        "judges_down": sorted(judge.down) if judge is not None else [],
    }
    robustness_table = ""
    if plan is not None:
        label = _model_display_name(cfg.model, cfg.model_args)
        output["robustness"], robustness_table, written = write_robustness(
            plan, tasks, all_rows, results, cfg.bootstrap_resamples, cfg.seed, run_dir, label
        )
        if written:
            output["reports"] = written
    if run_dir is not None:
        write_json(run_dir / "results.json", output)
        report_tasks = clean_tasks(tasks)  # benchmark reports lay out the clean run
        report_hooks = _report_hooks(registry, report_tasks, group_names)
        if report_hooks:
            ctx = ReportContext(
                results=output,
                run_dir=run_dir,
                rows={t.name: all_rows[t.name] for t in report_tasks},
                registry=registry,
                tasks=report_tasks,
            )
            output["reports"] = output.get("reports", []) + run_reports(report_hooks, ctx)
            write_json(run_dir / "results.json", output)
        output["run_dir"] = str(run_dir)
    table = markdown_table(results, groups)
    if robustness_table:
        table += "\n\nRobustness (drop = loss vs clean; paired bootstrap 95% CIs):\n\n" + robustness_table
    if run_dir is not None:
        (run_dir / "summary.md").write_text(table + "\n")
        mark_finished(run_dir)
    output["table"] = table
    output["resume_note"] = resume_note(total.cached, total.samples)
    return output


def _endpoint_stats(model: Any, judge: Any) -> dict[str, EndpointStats]:
    stats = {"model": model.stats}
    if judge is not None:
        stats.update({f"judge {j.judge_id}": j.model.stats for j in judge.judges})
    return stats


def _endpoint_figures(per_rank: list[dict[str, EndpointStats]]) -> dict[str, Any]:
    """Per endpoint (the model, each judge), the figures of all processes together."""
    merged: dict[str, EndpointStats] = {}
    for stats in per_rank:
        for name, s in stats.items():
            merged.setdefault(name, EndpointStats()).merge(s)
    return {name: s.figures() for name, s in merged.items()}


def builder_file(builder: Any) -> str:
    """Where the builder's code lives, so a viewer can rebuild episodes of a task given by file path."""
    builder = getattr(builder, "builder", builder)  # episodes read from data: the builder behind them
    return str(Path(inspect.getfile(type(builder))).resolve())


def _load_model(cfg: RunConfig, tasks: list[PreparedTask]) -> Model:
    model = create_model(cfg.model, cfg.model_args, cfg.batch_size, cfg.seed)
    try:
        model.prepare(tasks)
    except BaseException:
        model.close()
        raise
    return model


def _timing_block(t: TaskTiming) -> dict[str, Any]:
    overhead = max(0.0, t.busy_s - t.synthesis_s - t.generate_s - t.judge_s)
    return {
        "wall_seconds": round(t.wall_s, 4),
        "samples": t.samples,
        "samples_per_second": round(t.samples / t.wall_s, 4) if t.wall_s else None,
        "audio_seconds": round(t.audio_s, 3),
        "real_time_factor": round(t.wall_s / t.audio_s, 6) if t.audio_s else None,
        "synthesis_seconds": round(t.synthesis_s, 4),
        "generate_seconds": round(t.generate_s, 4),
        "judge_seconds": round(t.judge_s, 4),
        "harness_overhead_ms_per_sample": round(1000 * overhead / t.samples, 4) if t.samples else None,
        "cached_responses": t.cached,
        "errors": t.errors,
    }


def _report_hooks(registry: TaskRegistry, tasks: list[Any], group_names: list[str]) -> list[ReportHook]:
    hooks = [
        ReportHook(t.config.report, str(t.config.path), t.config.dir_of("report"))
        for t in tasks
        if t.config.report
    ]
    for g in group_names:
        group = registry.groups[g]
        if group.report:
            hooks.append(ReportHook(group.report, str(group.path), group.path.parent if group.path else None))
    return hooks
