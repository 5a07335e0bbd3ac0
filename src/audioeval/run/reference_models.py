"""Reference models: offline models a task names under `reference_models:` (e.g. a benchmark's
signal-blind baseline), answering the run's own (clean) requests beside the model, whatever --model is.

They are a stage of the run (`ReferenceStage`): each window of requests sent to the model goes to their
servers too (the serving path every model takes: response cache, resumable, the task's progress bar, rows
with their facets), so a rerun with the same cache costs them almost nothing, and their rows are aggregated
like the model's (results.json `reference_models`: model -> task or group -> `<k>-shot` block, with CIs). A
report shows them beside the model's scores without running anything itself.

A reference model that studies episodes of another seed before answering (`Model.probe_episodes`, e.g. a
signal-blind baseline's probe episodes) gets them from the run's episode source: synthesized once per configuration,
ahead, on a thread of their own with their own progress line, and kept in the episode store for every later
run, whatever its model. A model that studies without listening (`Model.studies_audio` False) gets episode
outlines instead where the task's builder makes them: nothing is synthesized for it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from audioeval.config.registry import TaskRegistry
from audioeval.errors import ConfigError
from audioeval.models.base import Model
from audioeval.models.registry import create_model, get_model_class, model_names
from audioeval.results.aggregate import Summaries, aggregate_groups, aggregate_task
from audioeval.results.record import PerK
from audioeval.results.score_rows import ScoreRow
from audioeval.run.cache import ResponseStore
from audioeval.run.prepared import PreparedTask
from audioeval.run.progress import progress_bar
from audioeval.run.serving import Server
from audioeval.run.stages import RunContext, Sample, Stage

if TYPE_CHECKING:
    from audioeval.run.synthesis import EpisodeSource

log = logging.getLogger("audioeval")


def reference_names(tasks: Sequence[PreparedTask]) -> list[str]:
    """Every reference model the tasks name, in the order first named."""
    return list(dict.fromkeys(n for t in tasks for n in t.config.reference_models))


def check_reference_models(tasks: Sequence[PreparedTask]) -> None:
    """Before the run: every named reference model exists and has a method for the tasks that name it."""
    for task in tasks:
        for name in task.config.reference_models:
            if name not in model_names():
                raise ConfigError(
                    f"{task.config.path}: reference_models: no model named {name!r} "
                    f"(registered: {', '.join(model_names())})."
                )
            get_model_class(name).check_task(task.config.name, task.config.builder_config)


def load_reference_models(tasks: Sequence[PreparedTask], run_model: str, seed: int) -> dict[str, Model]:
    """The reference models to serve, each prepared with the tasks that name it. One that is the run's own
    model is not loaded again: its numbers are the run's (see reference_sections)."""
    models: dict[str, Model] = {}
    try:
        for name in reference_names(tasks):
            if name != run_model:
                models[name] = create_model(name, {}, batch_size=1, seed=seed)
                models[name].prepare([t for t in tasks if name in t.config.reference_models])
    except BaseException:
        for model in models.values():
            model.close()
        raise
    return models


def _outlines(task: PreparedTask, seed: int) -> bool:
    """Whether the task's builder outlines its episodes of `seed`. A builder that fails to be made is asked no
    further here: the study makes it again, and reports what fails as any study's episode does."""
    try:
        return task.outline_builder(seed) is not None
    except Exception:  # noqa: BLE001
        return False


class ReferenceStage(Stage):
    def __init__(self, models: dict[str, Model], store: ResponseStore) -> None:
        self.models = models
        self.servers = {n: Server(m, store, kind="reference") for n, m in models.items()}
        self._studies: threading.Thread | None = None
        self._source: EpisodeSource | None = None

    def _names(self, task: PreparedTask) -> list[str]:
        if task.augment is not None:
            return []  # the reference models answer the clean requests only
        return [n for n in task.config.reference_models if n in self.servers]

    def applies(self, task: PreparedTask) -> bool:
        return bool(self._names(task))

    def row_sets(self, task: PreparedTask) -> list[str]:
        return self._names(task)

    def begin(self, context: RunContext) -> None:
        """Attach the run's episode source to the tasks, and start the studies' prefetch on a thread."""
        studies = []
        for task in context.tasks:
            task.episode_source = context.source
            for name in self._names(task):
                model = self.models[name]
                probe = model.probe_episodes(task)
                if probe is None or (not model.studies_audio and _outlines(task, probe[0])):
                    continue  # nothing to study, or outlines: made when studied, nothing to synthesize
                studies.append((name, task, *probe))
        if studies:
            self._source = context.source
            self._studies = threading.Thread(
                target=self._study, args=(studies, context), name="audioeval-studies", daemon=True
            )
            self._studies.start()

    def _study(self, studies: list[tuple[str, PreparedTask, int, int]], context: RunContext) -> None:
        names = ", ".join(dict.fromkeys(name for name, *_ in studies))
        total = sum(count for *_, count in studies)
        bar = progress_bar(
            context.show_progress and context.topology.is_main,
            total=total,
            desc=f"reference studies ({names}): {total} probe episodes, {len(studies)} tasks",
            unit="episode",
        )
        try:
            for _name, task, seed, count in studies:
                context.source.prefetch(task, seed, count, bar.update)
        except Exception as err:  # noqa: BLE001 - the model then makes them itself, and reports what fails
            log.debug("reference studies: prefetch stopped (%s)", err)
        finally:
            bar.close()

    def dispatch(self, samples: list[Sample]) -> None:
        requests = [s.request for s in samples]
        for name in self._names(samples[0].task):
            for sample, answer in zip(samples, self.servers[name].submit(requests), strict=True):
                sample.waiting[name] = answer

    async def finish(self, sample: Sample) -> None:
        for name, answer in sample.waiting.items():
            sample.references[name] = await answer

    async def aclose(self) -> None:
        for server in self.servers.values():
            await server.close()

    def close(self) -> None:
        """After the run, ended or failed: the studies' prefetch stops (within the episode it is making) and its
        thread is joined before the models close and the episode store does, so no thread outlives the run."""
        if self._studies is not None:
            if self._source is not None:
                self._source.stop()
            self._studies.join()
            self._studies = None
        for model in self.models.values():
            model.close()


def reference_sections(
    tasks: Sequence[PreparedTask],
    registry: TaskRegistry,
    group_names: list[str],
    run_model: str,
    rows: dict[str, dict[str, list[ScoreRow]]],
    sections: tuple[dict[str, PerK], dict[str, PerK]],
    n_resamples: int,
    seed: int,
) -> dict[str, dict[str, PerK]]:
    """Model -> task or group -> per-k blocks. `rows`: model -> task -> its scored rows; `sections`: the run's
    own (results, groups), which a reference model that is the run's own model reports as its numbers."""
    results, groups = sections
    out: dict[str, dict[str, PerK]] = {}
    for name in reference_names(tasks):
        members = [t for t in tasks if name in t.config.reference_models]
        if name == run_model:
            own = {t.name: results[t.name] for t in members}
            ran = set(own)
            own.update({g: per_k for g, per_k in groups.items() if set(registry.leaf_tasks(g)) <= ran})
            out[name] = own
            continue
        blocks: dict[str, PerK] = {}
        summaries: dict[str, dict[int, Summaries]] = {}
        for task in members:
            blocks[task.name], summaries[task.name] = aggregate_task(
                f"{task.name}@{name}", task.shots, rows[name][task.name], task.scorer, n_resamples, seed
            )
        out[name] = {**blocks, **aggregate_groups(registry, group_names, summaries)}
    return out
