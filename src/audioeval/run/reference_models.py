"""Reference models: offline models a task names under `reference_models:` (e.g. a benchmark's
signal-blind baseline), answering the run's own (clean) requests beside the model, whatever --model is.

They take the serving path every model takes (evaluator.TaskPipeline hands each rendered request to their
servers too: response cache, resumable, the task's progress bar, rows with their facets), so a rerun with the
same cache costs them almost nothing, and their rows are aggregated like the model's (results.json
`reference_models`: model -> task or group -> `<k>-shot` block, with CIs). A report shows them beside the
model's scores without running anything itself."""

from __future__ import annotations

from collections.abc import Sequence

from audioeval.config.registry import TaskRegistry
from audioeval.errors import ConfigError
from audioeval.models.base import Model
from audioeval.models.registry import create_model, get_model_class, model_names
from audioeval.results.aggregate import Summaries, aggregate_groups, aggregate_task
from audioeval.results.record import PerK
from audioeval.results.score_rows import ScoreRow
from audioeval.run.prepared import PreparedTask


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
