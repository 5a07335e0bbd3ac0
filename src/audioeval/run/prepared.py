"""Turning selected task names plus command-line settings into runnable tasks, and checking them
(templates, targets, shot counts, the model's needs) before any model is loaded."""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.augment.episode import augment_episode
from audioeval.augment.plan import Condition
from audioeval.config.registry import TaskRegistry
from audioeval.config.task import TaskConfig
from audioeval.config.templates import PromptRenderer
from audioeval.data.builders import EpisodeBuilder, builder_names, make_builder
from audioeval.data.stored_episodes import DatasetEpisodes, open_episodes
from audioeval.errors import ConfigError, UsageError, unknown_name_message
from audioeval.models.base import Model
from audioeval.redact import register_secret_args
from audioeval.results.scoring import TaskScorer
from audioeval.run.requirements import module_source
from audioeval.types import Request, RequestId, ShownEpisode

log = logging.getLogger("audioeval")


@dataclass
class PreparedTask:
    config: TaskConfig
    builder: EpisodeBuilder | DatasetEpisodes  # stored data (`dataset=`) stands in for the builder
    renderer: PromptRenderer
    shots: list[int]
    indices: list[int]
    gen_kwargs: dict[str, Any]
    scorer: TaskScorer
    skipped_shots: list[int] = field(default_factory=list)
    augment: Condition | None = None  # a robustness condition applied to every episode (audioeval.augment)
    # set by the run: where episodes come from (synthesis.EpisodeSource: the episode store, worker processes)
    episode_source: Any = None
    # (index, episode) that preflight rendered (read from the episode store, made by a synthesis worker or made
    # here): the run's first episode of this task, not made twice
    preflight_episode: tuple[int, dict[str, Any]] | None = None
    # its encoding for the episode store, when a worker made it (an EncodedEpisode)
    preflight_encoded: Any = None
    _seed_builders: dict[int, Any] = field(default_factory=dict, repr=False)  # episodes_of_seed's builders

    @property
    def name(self) -> str:
        """The task's name; a degraded copy is `<task>@<condition>`."""
        return self.config.name if self.augment is None else self.augment.task_name(self.config.name)

    @property
    def dataset_revision(self) -> dict[str, Any] | None:
        """Which stored data the episodes came from (`--task_args dataset=`), None when generated."""
        return self.builder.revision() if isinstance(self.builder, DatasetEpisodes) else None

    def source_files(self) -> dict[str, list[Path]]:
        """The code this task runs, by what the user would call it: for the preflight import check."""
        parser = module_source(self.scorer.parser_module)
        builder = getattr(self.builder, "builder", self.builder)  # stored episodes: the builder behind them
        files = {
            f"the builder of task {self.name}": [Path(inspect.getfile(type(builder)))],
            f"the metrics of task {self.name}": list(self.scorer.metric_files),
            f"parser {self.config.parser['name']!r}": [parser] if parser else [],
        }
        return files

    def episode(self, index: int) -> dict[str, Any]:
        episode = self.builder.episode(index)
        return episode if self.augment is None else augment_episode(episode, self.augment, self.builder)

    def episodes_of_seed(
        self, seed: int, indices: Sequence[int], audio: bool = True
    ) -> Iterator[dict[str, Any]]:
        """Episodes of this task's configuration under another seed (what a reference model studies): from the
        run's episode source (kept in the episode store, synthesized once per configuration), else made here.
        `audio=False` (a model that studies without listening): outlines instead where the builder makes them
        (`EpisodeBuilder.episode_outline`: labels and clip identities, nothing synthesized)."""
        outliner = None if audio else self.outline_builder(seed)
        if outliner is not None:
            for index in indices:
                yield outliner.episode_outline(index)
            return
        if self.episode_source is not None:
            for _index, episode, _seconds in self.episode_source.episodes(self, list(indices), seed):
                yield episode
            return
        builder = self._builder_of_seed(seed)
        for index in indices:
            episode = builder.episode(index)
            yield episode if self.augment is None else augment_episode(episode, self.augment, builder)

    def outline_builder(self, seed: int) -> Any:
        """The builder of this task's configuration under `seed` when it outlines episodes
        (`EpisodeBuilder.episode_outline`), else None (nor for a degraded copy: its clips are transformed)."""
        if self.augment is not None:
            return None
        builder = self._builder_of_seed(seed)
        outline = getattr(builder, "episode_outline", None)
        return builder if outline is not None and outline(0) is not None else None

    def _builder_of_seed(self, seed: int) -> Any:
        builder = self._seed_builders.get(seed)
        if builder is None:
            config = self.config
            builder = self._seed_builders[seed] = make_builder(
                config.builder,
                config.builder_config,
                {**config.builder_kwargs, "seed": seed},
                base_dir=config.dir_of("builder"),
                source=str(config.path),
            )
        return builder

    def requests_for(self, episode: dict[str, Any]) -> list[tuple[Request, str]]:
        """One (request, target) per shot count for this episode."""
        out = []
        for k in self.shots:
            messages = self.renderer.render(episode, k)
            info = {
                "sample_info": {
                    "task": self.config.name,
                    "k": k,
                    "episode": int(episode["index"]),
                    "episode_id": episode.get("id"),
                    "builder_config": self.config.builder_config,
                    "metadata": episode.get("metadata") or {},
                    "params": self.config.param_values,
                },
                "episode": episode,
            }
            if self.augment is not None:
                info["sample_info"]["augment"] = self.augment.name
            request = Request(
                messages=messages,
                gen_kwargs=self.gen_kwargs,
                rid=RequestId(self.config.name, k, int(episode["index"])),
                choices=self.renderer.label_space(episode, k),
                shown=ShownEpisode.of(episode, k, self.config.builder_config),
                info=info,
            )
            out.append((request, self.renderer.render_target(episode, k)))
        return out


def resolve_limit(limit: str | float | int | None, total: int) -> int:
    if limit is None:
        return total
    try:
        value = float(limit)
    except (TypeError, ValueError) as err:
        raise UsageError(
            f"--limit must be a count such as 50 or a fraction such as 0.1, got {limit!r}."
        ) from err
    if not math.isfinite(value) or value <= 0:
        raise UsageError(
            f"--limit must be a positive count such as 50 or a fraction such as 0.1, got {limit!r}."
        )
    if value < 1.0:
        return max(1, math.ceil(total * value))
    if value != int(value):
        raise UsageError(f"--limit must be an integer count or a fraction below 1, got {limit!r}.")
    return min(total, int(value))


def split_task_args(task_args: dict[str, Any], tasks: list[TaskConfig]) -> None:
    """Every --task_args key must be a parameter of at least one selected task."""
    declared = {p for t in tasks for p in t.parameters}
    for key in task_args:
        if key not in declared:
            names = ", ".join(t.name for t in tasks[:5]) + (" ..." if len(tasks) > 5 else "")
            raise UsageError(
                "--task_args: "
                + unknown_name_message("task parameter", key, declared, f"(the selected tasks: {names})")
            )


def prepare_tasks(
    registry: TaskRegistry,
    task_names: list[str],
    *,
    num_fewshot: list[int] | None,
    task_args: dict[str, Any],
    limit: str | float | None,
    seed: int,
    gen_kwargs: dict[str, Any],
) -> list[PreparedTask]:
    configs = [registry.tasks[n] for n in task_names]
    split_task_args(task_args, configs)
    prepared = []
    for base in configs:
        own_args = {k: v for k, v in task_args.items() if k in base.parameters}
        config = base.with_params(own_args, "--task_args")
        kwargs = dict(config.builder_kwargs)
        kwargs.setdefault("seed", seed)
        config.builder_kwargs = kwargs
        started = time.perf_counter()
        made = make_builder(
            config.builder,
            config.builder_config,
            kwargs,
            base_dir=config.dir_of("builder"),
            source=str(config.path),
        )
        stored = config.param_values.get("dataset")
        builder = _stored_episodes(made, config, own_args) if stored is not None else made
        log.debug("builder for %s ready in %.2fs", config.name, time.perf_counter() - started)
        shots_requested = list(num_fewshot) if num_fewshot is not None else list(config.num_fewshot)
        shots = [k for k in shots_requested if k >= config.min_shots]
        skipped = [k for k in shots_requested if k < config.min_shots]
        needs = f"k >= {config.min_shots}" + (
            f" with {config.min_shots_reason}" if config.min_shots_reason else ""
        )
        if skipped:
            log.warning("%s: skipping k=%s (this task needs %s)", config.name, skipped, needs)
        if not shots:
            raise UsageError(
                f"--num_fewshot {','.join(map(str, shots_requested))}: task {config.name!r} needs {needs}."
            )
        limit_count = resolve_limit(limit, builder.num_episodes())
        merged_kwargs = {**config.generation_kwargs, **gen_kwargs}
        register_secret_args(merged_kwargs)  # extra_body.user_token=...: masked in everything written
        prepared.append(
            PreparedTask(
                config=config,
                builder=builder,
                renderer=PromptRenderer(config),
                shots=shots,
                indices=list(range(limit_count)),
                gen_kwargs=merged_kwargs,
                scorer=TaskScorer(config),
                skipped_shots=skipped,
            )
        )
    return prepared


def _stored_episodes(
    builder: EpisodeBuilder, config: TaskConfig, given: dict[str, Any]
) -> EpisodeBuilder | DatasetEpisodes:
    """`--task_args dataset=...`: the task reads its episodes from that data instead of its builder."""
    spec = str(config.param_values["dataset"])
    ignored = [k for k in given if k != "dataset" and config.parameters[k].builder_kwarg]
    if ignored:
        log.warning(
            "%s: %s set with dataset=%s: the stored episodes were generated with the build's own settings, "
            "so these are ignored",
            config.name,
            ", ".join(ignored),
            spec,
        )
    benchmark = Path(config.builder).stem
    return open_episodes(builder, spec, benchmark, config.split, [benchmark, *builder_names()])


def preflight(
    tasks: list[PreparedTask],
    model_cls: type[Model],
    model_args: dict[str, Any] | None = None,
    stored: dict[str, dict[str, Any]] | None = None,
    made: Callable[[PreparedTask], Any] | None = None,
) -> None:
    """Render episode 0 of every task at every k: template errors, clip mismatches, missing label spaces,
    generation settings the model does not take and tasks the model has no method for all surface here,
    before the model is loaded. `stored`: task -> its first episode read from the episode store (not made
    again); `made(task)`: its first episode made elsewhere (the worker processes: a `Made`, or None when they
    could not make it, and it is made here)."""
    for task in tasks:
        model_cls.check_task(task.config.name, task.config.builder_config)
        if task.config.generation_kwargs:
            model_cls.check_gen_kwargs(
                task.config.generation_kwargs, f"{task.config.path}: generation_kwargs", model_args or {}
            )
        if not task.indices:
            raise ConfigError(f"{task.config.path}: the builder produced no episodes.")
        episode = (stored or {}).get(task.name)
        if episode is None and made is not None and (by_workers := made(task)) is not None:
            episode, task.preflight_encoded = by_workers.episode, by_workers.encoded
        if episode is None:
            episode = task.episode(task.indices[0])
        task.preflight_episode = (task.indices[0], episode)
        available = len(episode.get("demos") or [])
        too_many = [k for k in task.shots if k > available]
        if too_many:
            limit = task.builder.max_supported_shots()
            reason = f" (this task supports at most {limit})" if limit is not None else ""
            raise UsageError(
                f"task {task.name!r}: k={max(too_many)} needs {max(too_many)} demonstrations but its episodes carry "
                f"{available}{reason}. Lower --num_fewshot, or raise the episode size with --task_args max_shots=N "
                "where the task declares it."
            )
        for request, _target in task.requests_for(episode):
            model_cls.check_request(request.for_backend(), str(task.config.path))
