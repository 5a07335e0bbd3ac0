"""The evaluation loop of one process: one streaming pipeline for the whole run (pipeline.py).

This rank takes its slice of every task's episode indices (index % world_size == rank). The episodes come
from the episode store or worker processes (synthesis.py), every request goes through the model's one
serving path (serving.py) and the run's stages (stages.py: speech, judges, reference models), and each task's
rows come back sorted by (episode, k). Rank 0 then gathers the rows, merges the sample files in (episode, k)
order and aggregates, so results do not depend on process count, batch size, concurrency or timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.errors import UsageError
from audioeval.models.base import Model
from audioeval.results.score_rows import ScoreRow
from audioeval.run.cache import ResponseStore
from audioeval.run.distributed import Topology
from audioeval.run.pipeline import RunPipeline
from audioeval.run.prepared import PreparedTask
from audioeval.run.serving import Server
from audioeval.run.stages import Stage
from audioeval.run.synthesis import EpisodeSource
from audioeval.run.timing import TaskTiming


@dataclass
class EvalSettings:
    log_samples: bool = False
    show_progress: bool = True
    # run once every request is rendered, while the last answers come (the reports' imports: conductor.py)
    when_fed: Callable[[], Any] | None = None


@dataclass
class TaskOutcome:
    rows: list[ScoreRow]
    timing: TaskTiming
    per_rank_timing: list[TaskTiming] = field(default_factory=list)
    reference_rows: dict[str, list[ScoreRow]] = field(default_factory=dict)  # reference model -> its rows


@dataclass
class Evaluation:
    """One process's share of the run: each task's outcome, and the figures of the run as a whole."""

    tasks: dict[str, TaskOutcome]
    timing: TaskTiming


class Evaluator:
    def __init__(
        self,
        tasks: list[PreparedTask],
        model: Model,
        cache: ResponseStore,
        topology: Topology,
        run_dir: Path,
        settings: EvalSettings,
        stages: list[Stage],
        source: EpisodeSource,
    ) -> None:
        self.tasks = tasks
        self.server = Server(model, cache, kind="generate")
        self.topology = topology
        self.run_dir = run_dir
        self.settings = settings
        self.stages = stages
        self.source = source
        self.failed_task: str | None = None  # the task whose failure stopped the run

    def run(self) -> Evaluation:
        if self.settings.log_samples and not self.run_dir.is_dir():
            raise UsageError(
                f"--log_samples: process {self.topology.rank} cannot see the run folder {self.run_dir} that "
                "process 0 created. With several machines, put --output_path on a filesystem they all share."
            )
        rank, world = self.topology.rank, self.topology.world_size
        work = [(task, task.indices[rank::world]) for task in self.tasks]
        for task, indices in work:
            if task.preflight_episode is not None and task.preflight_episode[0] not in indices:
                task.preflight_episode = task.preflight_encoded = None  # another process's episode
        self.source.warm_up([t for t, indices in work if indices])
        if self.server.model.streams:
            # an endpoint sets the pace: episodes made ahead keep it busy; a model answering in this process
            # sets it itself, and reading episodes back from the store would only add to its work
            self.source.store_ahead(work)
        pipeline = RunPipeline(
            work,
            self.server,
            self.stages,
            self.source,
            self.topology,
            self.run_dir if self.settings.log_samples else None,
            self.settings.show_progress,
            self.settings.when_fed,
        )
        try:
            asyncio.run(pipeline.run())
        finally:
            self.failed_task = pipeline.failed_task
        outcomes = {}
        for run in pipeline.runs:
            for rows in (run.rows, *run.reference_rows.values()):
                rows.sort(key=lambda r: (r.episode, r.k))
            outcomes[run.task.name] = TaskOutcome(run.rows, run.timing, reference_rows=run.reference_rows)
        return Evaluation(outcomes, pipeline.timing)

    def failure(self) -> str:
        """What was being done when the run failed, for the message every rank prints."""
        return (
            f"while evaluating task {self.failed_task}" if self.failed_task else "while evaluating the tasks"
        )
