"""The leaderboard tasks `audioeval build` declares in a benchmark folder's eval.yaml: the numbers
`audioeval push-results` publishes for a run of the benchmark's tasks at their default k on that folder.

Which metrics a task reports, and so which one is its main metric, is known only once its metric modules have
scored something; a probe run finds out: every task of the benchmark whose config the folder holds, with the
groups made of them, one episode each, answered by a model that says nothing, with no cache and no files
written. Its record goes through the same selection and naming as a real run's (`headline_slots`), numbers that
could not be scored included (a judged metric without a judge), so the declared ids are the published ones."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import TaskConfig
from audioeval.data.eval_yaml import LeaderboardTask
from audioeval.models.base import Model
from audioeval.types import Request, Response


class _Silent(Model):
    """Answers every request with nothing: the probe needs the metrics' names, not their values."""

    name = "silent"

    def generate(self, requests: list[Request]) -> list[Response]:
        return [Response(text="") for _ in requests]


def leaderboard_tasks(
    folder: Path, benchmark: str, configs: list[str], include: list[str]
) -> list[LeaderboardTask]:
    """The leaderboard tasks of the benchmark built in `folder` (`benchmark`: a builder's name or the path of
    its .py file) from the tasks that read it, shipped or in the `include` folders; [] when there are none.
    Raises the run's AudioEvalError when the folder cannot be evaluated with the tasks' defaults."""
    from audioeval.api.evaluate import run, run_config
    from audioeval.results.publish.eval_results import headline_slots

    registry = TaskRegistry.discover(include)
    tasks = [
        name
        for name, task in registry.tasks.items()
        if _built_by(task, benchmark) and (task.builder_config is None or task.builder_config in configs)
    ]
    groups = [g for g in registry.groups if set(registry.leaf_tasks(g)) <= set(tasks)]
    if not tasks:
        return []
    cfg = run_config(
        tasks=groups + tasks, model=_Silent(), model_args=None, num_fewshot=None,
        task_args={"dataset": str(folder)}, limit=1, batch_size=None, seed=0, output_path=None,
        log_samples=False, include_path=include, gen_kwargs=None, cache_dir=None, no_cache=True,
        bootstrap_iters=0, judge=None, judge_args=None, asr=None, asr_args=None, spoken_text="asr",
        augment=None, augment_target=None, no_progress=True,
    )  # fmt: skip
    cfg.reference_models = False  # a benchmark's baselines report no number of the run's own
    with _quiet():
        record = run(cfg).record
    out: dict[str, LeaderboardTask] = {}
    for h in headline_slots(record):
        if h.benchmark == Path(benchmark).stem and h.task_id not in out:
            config = record.configs[h.name].config.get("builder_config") if h.kind == "task" else None
            out[h.task_id] = LeaderboardTask(h.task_id, config)
    return list(out.values())


def _built_by(task: TaskConfig, benchmark: str) -> bool:
    """Whether the task reads the episodes of this builder (a name, or a .py file given by its path)."""
    if task.builder.endswith(".py"):
        own = (task.dir_of("builder") / task.builder).resolve()
        return benchmark.endswith(".py") and own == Path(benchmark).resolve()
    return task.builder == benchmark


class _quiet:
    """The probe's own warnings (no judge given, ...) are about a run nobody asked for: only errors show."""

    def __enter__(self) -> None:
        self.logger = logging.getLogger("audioeval")
        self.level = self.logger.level
        self.logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: Any) -> None:
        self.logger.setLevel(self.level)
