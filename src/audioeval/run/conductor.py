"""One evaluation run, stage by stage:

1. plan: check the arguments, prepare and preflight the tasks, resolve the reports (planning.py);
2. evaluate: load the model (and the reference models), run every task on every rank (evaluator.py);
3. record: on rank 0, gather the rows and aggregate them into one typed record (results/record.py);
4. write: run the reports, then write results.json (once) and the summary table.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audioeval.data.destination import probe_writable
from audioeval.errors import OtherRankFailed, UsageError
from audioeval.models.base import Model
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.registry import create_model
from audioeval.results.compact_table import compact_table
from audioeval.results.outputs import (
    make_run_dir,
    mark_failed,
    mark_finished,
    markdown_table,
    write_json,
    write_text,
)
from audioeval.results.record import RunRecord
from audioeval.results.reports import ReportContext, ReportImports, run_reports
from audioeval.results.run_health import resume_note
from audioeval.results.score_rows import ScoreRow
from audioeval.run.cache import NoCache, ResponseCache, ResponseStore
from audioeval.run.distributed import Topology, collectively, init_topology
from audioeval.run.episode_store import EpisodeStore
from audioeval.run.evaluator import EvalSettings, Evaluator
from audioeval.run.planning import RunPlan, plan_run
from audioeval.run.prepared import PreparedTask
from audioeval.run.recording import (
    Evaluated,
    aggregate_sections,
    build_record,
    gather_rows,
    model_display_name,
)
from audioeval.run.reference_models import ReferenceStage, load_reference_models
from audioeval.run.settings import RunConfig, cache_folder, default_cache_dir, episode_store_path
from audioeval.run.stages import Stage
from audioeval.run.synthesis import EpisodeSource

if TYPE_CHECKING:
    from audioeval.run.judging import JudgePanel
    from audioeval.run.speaking import SpeechStage

log = logging.getLogger("audioeval")


@dataclass
class RunOutcome:
    """What a finished run hands back on rank 0."""

    record: RunRecord
    run_dir: Path | None
    table: str  # the summary table (markdown): every metric, as summary.md
    resume_note: str | None  # how much came from the response cache
    compact: str = ""  # the main metric per task and k (results/compact_table.py), what the CLI prints

    def as_dict(self) -> dict[str, Any]:
        out = self.record.to_json()
        if self.run_dir is not None:
            out["run_dir"] = str(self.run_dir)
        return {**out, "table": self.table, "resume_note": self.resume_note}


def check_cache_folders(cfg: RunConfig) -> None:
    """Before anything is prepared: audioeval's working folder ($AUDIOEVAL_CACHE: dataset locks, synthesized
    speech, the default response cache) and the response cache's folder can be written. Every run needs the
    first, even with --no_cache; a read-only one would otherwise end in a library's traceback."""
    work = default_cache_dir()
    source = "$AUDIOEVAL_CACHE" if os.environ.get("AUDIOEVAL_CACHE") else "audioeval's working folder"
    _check_writable(work, f"{source} {work}", "set AUDIOEVAL_CACHE to a writable folder")
    folder, source = cache_folder(cfg)
    if not cfg.no_cache and folder != work:
        _check_writable(
            folder,
            f"{source}: the response cache folder {folder}",
            "point --cache_dir at a writable folder, or pass --no_cache (a killed run then starts over)",
        )


def _check_writable(folder: Path, what: str, advice: str) -> None:
    try:
        probe_writable(folder)
    except OSError as err:
        raise UsageError(f"{what} is not writable ({err.strerror or err}): {advice}.") from err


Stores = tuple["ResponseCache | NoCache", "EpisodeStore | None"]


def _open_stores(cfg: RunConfig) -> Stores:
    """The response cache and, beside it, what a rerun needs of an episode whose answers are all cached (so it
    is not synthesized again); neither with --no_cache."""
    if cfg.no_cache:
        return NoCache(), None
    folder, source = cache_folder(cfg)
    cache = ResponseCache(folder / "responses.sqlite", source)
    return cache, EpisodeStore(episode_store_path(cfg))


def _close_stores(cache: ResponseCache | NoCache, episodes: EpisodeStore | None) -> None:
    cache.close()
    if episodes is not None:
        episodes.close()


def run_evaluation(cfg: RunConfig, topology: Topology | None = None) -> dict[str, Any] | None:
    """The results.json content plus `run_dir`, `table` and `resume_note` on rank 0 (None on other ranks).
    `warnings` in it lists what went wrong without stopping the run; `unscored_tasks` the tasks that got no
    answer at all."""
    outcome = conduct(cfg, topology)
    return outcome.as_dict() if outcome is not None else None


def conduct(
    cfg: RunConfig, topology: Topology | None = None, finish: Callable[[RunOutcome], Any] | None = None
) -> Any:
    """The run, stage by stage. Returns `finish(outcome)` (the outcome itself without `finish`), made on rank 0.

    Without a topology the run starts (or joins) the process group itself and tears down one it started:
    ranks other than 0 return None. Given one (a Python caller's), the group stays as it is and every rank
    returns rank 0's value."""
    wall_start = time.perf_counter()
    shared = topology is not None
    check_cache_folders(cfg)
    plan = plan_run(cfg)
    for notice in cfg.notices:  # after the checks: an error is never preceded by a notice about the run
        log.warning(notice)
    judge = _judge_panel(cfg, plan)
    topology = topology or init_topology()
    # before the run folder: a cache that cannot be written stops the run with nothing left behind
    cache, episodes = collectively(
        topology, partial(_open_stores, cfg), "while opening the response cache", gather=False
    )
    try:
        run_dir = _open_run_dir(cfg, topology)
    except BaseException:
        _close_stores(cache, episodes)
        raise
    imports = ReportImports(plan.reports)  # imported while the last answers come, if a report will run
    try:
        evaluated = _evaluate(cfg, plan, judge, topology, run_dir, (cache, episodes), imports)
    except BaseException as err:
        _mark_failed(run_dir, topology, err)
        topology.close()
        raise
    finally:
        imports.close()
    finish = finish or (lambda outcome: outcome)
    value, failure = None, None
    if topology.is_main:
        try:
            rows, references, timing = gather_rows(cfg, plan, evaluated, topology, run_dir, wall_start)
            sections = aggregate_sections(cfg, plan, rows, references)
            record, robustness_table = build_record(cfg, plan, sections, rows, evaluated, timing, run_dir)
            value = finish(_write(plan, record, robustness_table, rows, run_dir))
        except BaseException as err:
            _mark_failed(run_dir, topology, err)
            if not (shared and topology.world_size > 1 and isinstance(err, Exception)):
                raise
            failure = err
    if not shared or topology.world_size == 1:
        return value
    value, message = topology.broadcast((value, None if failure is None else str(failure) or repr(failure)))
    if failure is not None:
        raise failure
    if message is not None:
        raise OtherRankFailed(f"rank 0 failed while writing the results: {message}")
    return value


def _mark_failed(run_dir: Path | None, topology: Topology, err: BaseException) -> None:
    if run_dir is not None and topology.is_main:
        mark_failed(run_dir, "interrupted" if isinstance(err, KeyboardInterrupt) else str(err) or repr(err))


def _judge_panel(cfg: RunConfig, plan: RunPlan) -> JudgePanel | None:
    if not cfg.judge:
        return None
    from audioeval.run.judging import JudgePanel  # late import: only runs that judge need it

    return JudgePanel.create(cfg.judge, cfg.judge_args, plan.judge_roles)


def _open_run_dir(cfg: RunConfig, topology: Topology) -> Path | None:
    run_dir = None
    if topology.is_main and cfg.output_path:
        run_dir = make_run_dir(cfg.output_path, model_display_name(cfg.model, cfg.model_args))
    run_dir = topology.broadcast(run_dir)
    if cfg.log_samples and run_dir is None:
        raise UsageError("--log_samples needs --output_path to know where to write the samples.")
    return run_dir


# ---- stage 2: evaluate -------------------------------------------------------------------------------------
def _evaluate(
    cfg: RunConfig,
    plan: RunPlan,
    judge: JudgePanel | None,
    topology: Topology,
    run_dir: Path | None,
    stores: Stores,
    imports: ReportImports,
) -> Evaluated:
    cache, episodes = stores
    if judge is not None:
        judge.attach_cache(cache)
    model: Model | None = None
    source: EpisodeSource | None = None
    stages: list[Stage] = [judge] if judge is not None else []  # closed however far the loading gets
    try:
        model = collectively(
            topology,
            partial(_load_model, cfg, plan.tasks),
            f"while loading --model {cfg.model}",
            gather=False,
        )
        references = collectively(
            topology,
            partial(load_reference_models, plan.reference_tasks(cfg), cfg.model, cfg.seed),
            "while loading the reference models",
            gather=False,
        )
        if references:
            stages.append(ReferenceStage(references, cache))
        speech: SpeechStage | None = collectively(
            topology,
            partial(_speech_stage, cfg, model, cache),
            f"while loading --asr {cfg.asr}",
            gather=False,
        )
        # the order each answer goes through them: heard, then judged (the chosen text), then the references
        stages = ([speech] if speech is not None else []) + stages
        # the reports' plotting library is imported while the last answers come, not after them
        reporting = topology.is_main and run_dir is not None and imports.modules
        settings = EvalSettings(cfg.log_samples, cfg.show_progress, imports.import_now if reporting else None)
        source = EpisodeSource(episodes)  # closed before the stores: no thread writes to a closed one
        # a model whose weights may change between runs (given in memory) is never answered from the cache
        answers = cache if model.cacheable and model is not cfg.model_instance else NoCache()
        evaluator = Evaluator(
            plan.tasks, model, answers, topology, run_dir or Path("."), settings, stages, source
        )
        # every rank reports its own failure, naming the task; rank 0 says which rank failed
        gathered = collectively(topology, evaluator.run, evaluator.failure)
        outcomes = {t.name: [g.tasks[t.name] for g in gathered] for t in plan.tasks}
        run_timings = [g.timing for g in gathered]
        endpoints = _endpoint_figures(topology.gather(_endpoint_stats(model, stages)))
        topology.barrier()
        topology.close()  # a group this run started ends here; rank 0 then aggregates and writes
    finally:
        if model is not None and model is not cfg.model_instance:  # the caller's own model stays theirs, open
            model.close()
        for stage in stages:
            stage.close()
        if source is not None:
            source.close()
        _close_stores(cache, episodes)
    assert model is not None
    judges = judge.describe() if judge is not None else None
    down = sorted(judge.down) if judge is not None else []
    described = speech.describe() if speech is not None else None
    return Evaluated(
        outcomes if topology.is_main else {},
        endpoints,
        model.identity,
        judges,
        down,
        cache.damage,
        topology.world_size,
        described,
        run_timings,
    )


def _speech_stage(cfg: RunConfig, model: Model, cache: ResponseStore) -> SpeechStage | None:
    """The ASR stage of a model that answers in speech; an --asr given for one that does not is unused."""
    from audioeval.run.speaking import SpeechStage  # late import: only runs that speak need it

    if not model.speaks and cfg.spoken_text == "transcript":
        raise UsageError(
            f"--spoken_text transcript: model {cfg.model!r} does not answer in speech, so it has no transcript of "
            "what it said; drop the flag (its text answers are scored), or ask a model that speaks (e.g. "
            "--model openai --model_args ...,audio_output=true)."
        )
    if not model.speaks and (cfg.asr or cfg.asr_args):
        log.warning("--asr: model %r does not answer in speech, so nothing is transcribed", cfg.model)
    return SpeechStage.create(cfg.asr, cfg.asr_args, cfg.spoken_text, model, cache)  # type: ignore[arg-type]


def _load_model(cfg: RunConfig, tasks: list[PreparedTask]) -> Model:
    """The run's model: made from its name and arguments, or the caller's own object (`model=` in Python)."""
    if cfg.model_instance is not None:
        cfg.model_instance.prepare(tasks)
        return cfg.model_instance
    model = create_model(cfg.model, cfg.model_args, cfg.batch_size, cfg.seed)
    try:
        model.prepare(tasks)
    except BaseException:
        model.close()
        raise
    return model


# ---- stage 4: write (rank 0) -------------------------------------------------------------------------------
def _write(
    plan: RunPlan,
    record: RunRecord,
    robustness_table: str,
    rows: dict[str, list[ScoreRow]],
    run_dir: Path | None,
) -> RunOutcome:
    table = markdown_table(record.sections.results, record.sections.groups)
    compact = compact_table(record.sections.results, record.sections.groups)
    if robustness_table:
        robustness = "\n\nRobustness (drop = loss vs clean; paired bootstrap 95% CIs):\n\n" + robustness_table
        table, compact = table + robustness, compact + robustness
    if run_dir is not None:
        if plan.reports:  # benchmark reports lay out the clean run
            tasks = plan.clean_tasks
            context = ReportContext(
                record, run_dir, {t.name: rows[t.name] for t in tasks}, plan.registry, tasks
            )
            record.reports = (record.reports or []) + run_reports(plan.reports, context)
        write_json(run_dir / "results.json", record.to_json())
        write_text(run_dir / "summary.md", table + "\n")
        mark_finished(run_dir)
    total = record.timing
    note = resume_note(total["cached_responses"], total["samples"])
    return RunOutcome(record, run_dir, table, note, compact)


# ---- figures -----------------------------------------------------------------------------------------------
def _endpoint_stats(model: Model, stages: list[Stage]) -> dict[str, EndpointStats]:
    stats = {"model": model.stats}
    for stage in stages:
        stats.update(stage.endpoints())
    return stats


def _endpoint_figures(per_rank: list[dict[str, EndpointStats]]) -> dict[str, Any]:
    """Per endpoint (the model, each judge), the figures of all processes together."""
    merged: dict[str, EndpointStats] = {}
    for stats in per_rank:
        for name, s in stats.items():
            merged.setdefault(name, EndpointStats()).merge(s)
    return {name: s.figures() for name, s in merged.items()}
