"""Reference models: offline models a task names under `reference_models:` (e.g. a benchmark's
signal-blind baseline), scored on the run's own episodes whatever --model is, and aggregated like the model's
results (results.json `reference_models`: model -> task or group -> `<k>-shot` block, with CIs). A report
shows them beside the model's scores without re-running anything itself."""

from __future__ import annotations

import logging
import time
from typing import Any

from audioeval.config.registry import TaskRegistry
from audioeval.errors import ConfigError
from audioeval.models.base import Model
from audioeval.models.registry import create_model, model_names
from audioeval.results.aggregate import aggregate_groups, aggregate_task
from audioeval.results.score_rows import ScoreRow
from audioeval.results.scoring import SampleToScore
from audioeval.run.prepared import PreparedTask

log = logging.getLogger("audioeval")


def check_reference_models(tasks: list[PreparedTask]) -> None:
    """Before the run: every named reference model exists."""
    for task in tasks:
        for name in task.config.reference_models:
            if name not in model_names():
                raise ConfigError(
                    f"{task.config.path}: reference_models: no model named {name!r} "
                    f"(registered: {', '.join(model_names())})."
                )


def episode_rows(model: Model, task: PreparedTask, episode: dict[str, Any]) -> list[ScoreRow]:
    """The model's scored samples (one per shot count) on one episode of a prepared task."""
    pairs = task.requests_for(episode)
    responses = model.generate([request.for_backend() for request, _ in pairs])  # what a backend may see
    ok = [i for i, r in enumerate(responses) if r.ok]
    samples = [
        SampleToScore(responses[i].text or "", pairs[i][1], pairs[i][0].info["sample_info"]) for i in ok
    ]
    scored = dict(zip(ok, task.scorer.score(samples), strict=True))
    rows = []
    for i, ((request, _), response) in enumerate(zip(pairs, responses, strict=True)):
        result = scored.get(i, {"scores": {}, "parse_failure": False})
        rows.append(
            ScoreRow(
                episode=request.rid.episode,
                k=request.rid.shots,
                scores=result["scores"],
                parse_failure=result["parse_failure"],
                error=not response.ok,
                audio_seconds=request.audio_seconds,
                error_message=response.error,
            )
        )
    return rows


def score_reference_models(
    tasks: list[PreparedTask],
    registry: TaskRegistry,
    group_names: list[str],
    run_model: str,
    results: dict[str, Any],
    groups: dict[str, Any],
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Model -> task or group -> per-k blocks. A reference model that is the run's own model is not run
    again: its blocks are the run's results (`results`, `groups`)."""
    out: dict[str, Any] = {}
    names = list(dict.fromkeys(n for t in tasks for n in t.config.reference_models))
    for name in names:
        members = [t for t in tasks if name in t.config.reference_models]
        summaries: dict[str, Any] = {}
        blocks: dict[str, Any] = {}
        started = time.perf_counter()
        model = None if name == run_model else create_model(name, {}, batch_size=1, seed=seed)
        if model is not None:
            model.prepare(members)
        for task in members:
            if model is None:
                blocks[task.name] = results[task.name]
                continue
            rows = [row for index in task.indices for row in episode_rows(model, task, task.episode(index))]
            blocks[task.name], summaries[task.name] = aggregate_task(
                f"{task.name}@{name}", task.shots, rows, task.scorer, n_resamples, seed
            )
        if model is None:
            names_run = set(blocks)
            blocks.update(
                {g: per_k for g, per_k in groups.items() if set(registry.leaf_tasks(g)) <= names_run}
            )
        else:
            model.close()
            blocks.update(aggregate_groups(registry, group_names, summaries))
            log.info(
                "reference model %s scored on the run's episodes in %.1fs",
                name,
                time.perf_counter() - started,
            )
        out[name] = blocks
    return out
