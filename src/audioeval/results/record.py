"""What one run produced, as one typed record: built once when the run's numbers are complete, written once
as results.json (`RunRecord.to_json`).

The per-k blocks of `results`, `groups`, `facets`, `pooled` and `reference_models` are JSON blocks made by
aggregate.py (`<metric>`, `<metric>_stderr`, `<metric>_ci95`, `n`, ...); the record gives the sections and
the run's description their types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: `<k>-shot` (or a shot setting such as `few-shot`) -> metric block
PerK = dict[str, dict[str, Any]]
#: facet -> value -> per-k blocks
FacetBlocks = dict[str, dict[str, PerK]]


@dataclass
class TaskRecord:
    """results.json `configs[task]`: what the task was, so a reader can tell two runs' tasks apart."""

    hash: str
    version: Any
    shots: list[int]
    n_episodes: int
    builder_file: str  # where the builder's code lives (a viewer rebuilds episodes from it)
    config: dict[str, Any]  # the configuration as it ran (TaskConfig.resolved)
    dataset: dict[str, Any] | None = None  # the stored data the episodes came from (`dataset=`)
    augment: dict[str, Any] | None = None  # the robustness condition of a degraded copy

    def to_json(self) -> dict[str, Any]:
        out = {
            "hash": self.hash,
            "version": self.version,
            "shots": self.shots,
            "n_episodes": self.n_episodes,
            "builder_file": self.builder_file,
            "config": self.config,
        }
        if self.dataset:
            out["dataset"] = self.dataset
        if self.augment is not None:
            out["augment"] = self.augment
        return out


@dataclass
class ModelRecord:
    name: str
    model_args: dict[str, Any]  # secrets masked
    identity: dict[str, Any]
    batch_size: int


@dataclass
class Sections:
    """The run's numbers, one section each (see docs/architecture.md, Aggregation)."""

    results: dict[str, PerK] = field(default_factory=dict)  # task -> per-k blocks
    groups: dict[str, PerK] = field(default_factory=dict)  # group -> per-k blocks
    facets: dict[str, FacetBlocks] = field(default_factory=dict)  # task or group -> facet blocks
    pooled: dict[str, PerK] = field(default_factory=dict)  # group -> shot setting -> pooled block
    reference_models: dict[str, dict[str, PerK]] = field(default_factory=dict)  # model -> task or group


@dataclass
class RunRecord:
    sections: Sections
    configs: dict[str, TaskRecord]
    model: ModelRecord
    judges: dict[str, Any] | None  # judge id -> requests, failures, identity, sampling
    augment: dict[str, Any] | None  # the robustness plan
    seed: int
    num_fewshot: list[int] | None
    task_args: dict[str, Any]
    limit: str | None
    bootstrap_resamples: int
    world_size: int
    versions: dict[str, str | None]
    git_commit: str | None
    date: str
    timing: dict[str, Any]  # run totals, `endpoints` and `tasks` (per task)
    warnings: list[str]
    unscored_tasks: list[str]
    judges_down: list[str]
    robustness: dict[str, Any] | None = None  # the robustness section of an --augment run
    reports: list[str] | None = None  # files the reports (and the robustness table) wrote
    speech: dict[str, Any] | None = None  # the ASR of spoken answers and which text was scored

    def to_json(self) -> dict[str, Any]:
        """The results.json content, in its documented key order."""
        s = self.sections
        out: dict[str, Any] = {
            "results": s.results,
            "groups": s.groups,
            "facets": s.facets,
            "pooled": s.pooled,
            "reference_models": s.reference_models,
            "configs": {name: t.to_json() for name, t in self.configs.items()},
            "model": {
                "name": self.model.name,
                "model_args": self.model.model_args,
                "identity": self.model.identity,
                "batch_size": self.model.batch_size,
            },
        }
        out.update(
            {
                key: getattr(self, key)
                for key in (
                    "judges", "augment", "seed", "num_fewshot", "task_args", "limit", "bootstrap_resamples",
                    "world_size", "versions", "git_commit", "date", "timing", "warnings", "unscored_tasks",
                    "judges_down",
                )
            }
        )  # fmt: skip
        if self.robustness is not None:
            out["robustness"] = self.robustness
        if self.reports is not None:
            out["reports"] = self.reports
        if self.speech is not None:
            out["speech"] = self.speech
        return out
