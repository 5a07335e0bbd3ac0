"""Stage 3 of a run, on rank 0: every rank's outcomes gathered into the run's rows, aggregated once into the
sections of results.json, and the run's record built from them (results/record.py)."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from audioeval.redact import redact_args
from audioeval.results.aggregate import (
    aggregate_facets,
    aggregate_group_facets,
    aggregate_groups,
    aggregate_pooled,
    aggregate_task,
    needs_facet_draws,
)
from audioeval.results.outputs import SampleLog, git_commit, library_versions
from audioeval.results.record import ModelRecord, RunRecord, Sections, TaskRecord
from audioeval.results.run_health import failure_warnings
from audioeval.results.score_rows import ScoreRow
from audioeval.run.conditions import condition_groups, write_robustness
from audioeval.run.distributed import Topology
from audioeval.run.evaluator import TaskOutcome
from audioeval.run.planning import RunPlan
from audioeval.run.prepared import PreparedTask
from audioeval.run.reference_models import reference_sections
from audioeval.run.settings import RunConfig
from audioeval.run.timing import TaskTiming


@dataclass
class Evaluated:
    """Stage 2's yield: on rank 0 every rank's outcome per task; on every rank the figures of the run."""

    outcomes: dict[str, list[TaskOutcome]]
    endpoints: dict[str, Any]
    identity: dict[str, Any]  # the model's
    judges: dict[str, Any] | None
    judges_down: list[str]
    cache_damage: str | None
    world_size: int
    speech: dict[str, Any] | None = None  # results.json `speech`: the ASR and which text was scored
    run_timings: list[TaskTiming] = field(default_factory=list)  # each rank's figures of the run as a whole


@dataclass
class Timings:
    total: TaskTiming
    tasks: dict[str, dict[str, Any]]


def gather_rows(
    cfg: RunConfig,
    plan: RunPlan,
    evaluated: Evaluated,
    topology: Topology,
    run_dir: Path | None,
    wall_start: float,
) -> tuple[dict[str, list[ScoreRow]], dict[str, dict[str, list[ScoreRow]]], Timings]:
    """Every task's rows (all ranks), the reference models' rows (model -> task -> rows), the timings; the
    ranks' sample files merged in (episode, k) order."""
    rows: dict[str, list[ScoreRow]] = {}
    references: dict[str, dict[str, list[ScoreRow]]] = {}
    timing = Timings(TaskTiming(), {})
    for task in plan.tasks:
        gathered = evaluated.outcomes[task.name]
        rows[task.name] = [row for outcome in gathered for row in outcome.rows]
        for name in gathered[0].reference_rows:
            merged = [row for outcome in gathered for row in outcome.reference_rows[name]]
            references.setdefault(name, {})[task.name] = merged
        task_timing = TaskTiming()
        for outcome in gathered:
            task_timing.add(outcome.timing)
        task_timing.wall_s = gathered[0].timing.wall_s
        timing.tasks[task.name] = timing_block(task_timing)
        if cfg.log_samples and run_dir is not None:
            SampleLog.merge(run_dir, task.name, topology.world_size)
    for run_timing in evaluated.run_timings:  # the run as a whole: tasks overlap, so not the tasks' sum
        timing.total.add(run_timing)
    timing.total.wall_s = time.perf_counter() - wall_start
    return rows, references, timing


def aggregate_sections(
    cfg: RunConfig,
    plan: RunPlan,
    rows: dict[str, list[ScoreRow]],
    references: dict[str, dict[str, list[ScoreRow]]],
) -> Sections:
    """Every aggregation the tasks and groups declare, each computed once."""
    n, seed, registry, groups = cfg.bootstrap_resamples, cfg.seed, plan.registry, plan.group_names
    sections = Sections()
    summaries, facet_summaries = {}, {}
    for task in plan.tasks:
        sections.results[task.name], summaries[task.name] = aggregate_task(
            task.name, task.shots, rows[task.name], task.scorer, n, seed
        )
        if task.config.facets:
            draws = needs_facet_draws(registry, groups, task.name)
            sections.facets[task.name], facet_summaries[task.name] = aggregate_facets(
                task.name, task.shots, rows[task.name], task.scorer, task.config.facets, n, seed, draws
            )
    sections.groups = aggregate_groups(registry, groups, summaries)
    sections.groups.update(
        condition_groups(plan.augment, partial(aggregate_groups, registry), groups, summaries)
    )
    sections.facets.update(aggregate_group_facets(registry, groups, facet_summaries, rows, n, seed))
    sections.pooled = aggregate_pooled(registry, groups, rows, n, seed)
    own = (sections.results, sections.groups)
    sections.reference_models = reference_sections(
        plan.reference_tasks(cfg), registry, groups, cfg.model, references, own, n, seed
    )
    return sections


def build_record(
    cfg: RunConfig,
    plan: RunPlan,
    sections: Sections,
    rows: dict[str, list[ScoreRow]],
    evaluated: Evaluated,
    timing: Timings,
    run_dir: Path | None,
) -> tuple[RunRecord, str]:
    """The record, and the robustness table of an --augment run (its files written to the run folder)."""
    warnings, unscored = failure_warnings(rows, evaluated.judges, evaluated.cache_damage)
    model = ModelRecord(
        cfg.model, _described(redact_args(cfg.model_args)), evaluated.identity, cfg.batch_size
    )
    record = RunRecord(
        sections=sections,
        configs={t.name: _task_record(t) for t in plan.tasks},
        model=model,
        judges=evaluated.judges,
        augment=plan.augment.record() if plan.augment is not None else None,
        seed=cfg.seed,
        num_fewshot=cfg.num_fewshot,
        task_args=cfg.task_args,
        limit=cfg.limit,
        bootstrap_resamples=cfg.bootstrap_resamples,
        world_size=evaluated.world_size,
        versions=library_versions(),
        git_commit=git_commit(),
        date=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        timing={**timing_block(timing.total), "endpoints": evaluated.endpoints, "tasks": timing.tasks},
        warnings=warnings,
        unscored_tasks=unscored,
        judges_down=evaluated.judges_down,
        speech=evaluated.speech,
    )
    table = ""
    if plan.augment is not None:
        label = model_display_name(cfg.model, cfg.model_args)
        n, seed = cfg.bootstrap_resamples, cfg.seed
        record.robustness, table, written = write_robustness(
            plan.augment, plan.tasks, rows, sections.results, n, seed, run_dir, label
        )
        record.reports = written or None
    return record, table


def _task_record(task: PreparedTask) -> TaskRecord:
    return TaskRecord(
        hash=task.config.content_hash(),
        version=task.config.version,
        shots=task.shots,
        n_episodes=len(task.indices),
        builder_file=builder_file(task.builder),
        config=task.config.resolved(),
        dataset=task.dataset_revision,
        augment=task.augment.record() if task.augment is not None else None,
    )


def _described(model_args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as results.json records them: an object given from Python (a loaded model, its
    processor) by its class, not its whole repr."""
    plain = (str, int, float, bool, type(None), list, dict)
    return {
        k: v if isinstance(v, plain) else f"<{type(v).__name__} in memory>" for k, v in model_args.items()
    }


def model_display_name(model_name: str, model_args: dict[str, Any]) -> str:
    """The run folder's name: the backend and the checkpoint it ran (a model given in memory by its class)."""
    for key in ("pretrained", "model", "asr"):
        value = model_args.get(key)
        if value and isinstance(value, str):
            return f"{model_name}__{Path(value).name}"
        if value:
            return f"{model_name}__{type(value).__name__}"
    return model_name


def builder_file(builder: Any) -> str:
    """Where the builder's code lives, so a viewer can rebuild episodes of a task given by file path."""
    builder = getattr(builder, "builder", builder)  # episodes read from data: the builder behind them
    return str(Path(inspect.getfile(type(builder))).resolve())


def timing_block(t: TaskTiming) -> dict[str, Any]:
    """The figures of a task, or of the run as a whole (which alone has the harness's CPU per sample)."""
    harness = t.harness_cpu_s
    return {
        "wall_seconds": round(t.wall_s, 4),
        "samples": t.samples,
        "samples_per_second": round(t.samples / t.wall_s, 4) if t.wall_s else None,
        "audio_seconds": round(t.audio_s, 3),
        "real_time_factor": round(t.wall_s / t.audio_s, 6) if t.audio_s else None,
        "synthesis_seconds": round(t.synthesis_s, 4),
        "episodes_synthesized": t.synthesized,
        "generate_seconds": round(t.generate_s, 4),
        "judge_seconds": round(t.judge_s, 4),
        "asr_seconds": round(t.asr_s, 4),
        "harness_overhead_ms_per_sample": round(1000 * harness / t.samples, 4)
        if harness is not None and t.samples
        else None,
        "cached_responses": t.cached,
        "errors": t.errors,
    }
