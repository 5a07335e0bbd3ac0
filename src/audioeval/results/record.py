"""What one run produced, as one typed record: built once when the run's numbers are complete, written once
as results.json (`RunRecord.to_json`) and read back as the same types (`RunRecord.from_json`;
results/run_files.py reads a run folder).

The sections hold typed per-k blocks (results/blocks.py). What results.json holds is declared once, as
`ResultsFile` below: reading checks a file against it (a damaged field is named) and docs/schemas/ publishes
its JSON Schema (results/schemas.py)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from audioeval.results.blocks import FacetBlocks, PerK, ShotBlock

__all__ = [
    "FacetBlocks",
    "ModelRecord",
    "PerK",
    "ResultsFile",
    "RunRecord",
    "Sections",
    "ShotBlock",
    "TaskRecord",
]


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

    @property
    def builder(self) -> str | None:
        """The builder as the task's YAML names it: a builder's name, or a file beside the YAML."""
        value = self.config.get("builder")
        return str(value) if value else None

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

    @property
    def label(self) -> str:
        """The model as tables name it: the backend, and the checkpoint or model it was given."""
        for key in ("pretrained", "model", "asr"):
            if self.model_args.get(key):
                return f"{self.name} ({Path(str(self.model_args[key])).name})"
        return self.name


@dataclass
class Sections:
    """The run's numbers, one section each (see docs/architecture.md, Aggregation)."""

    results: dict[str, PerK] = field(default_factory=dict)  # task -> per-k blocks
    groups: dict[str, PerK] = field(default_factory=dict)  # group -> per-k blocks
    facets: dict[str, FacetBlocks] = field(default_factory=dict)  # task or group -> facet blocks
    pooled: dict[str, PerK] = field(default_factory=dict)  # group -> shot setting -> pooled block
    reference_models: dict[str, dict[str, PerK]] = field(default_factory=dict)  # model -> task or group

    def to_json(self) -> dict[str, Any]:
        return {
            "results": section_json(self.results),
            "groups": section_json(self.groups),
            "facets": section_json(self.facets),
            "pooled": section_json(self.pooled),
            "reference_models": section_json(self.reference_models),
        }


def section_json(section: Any) -> Any:
    """A section (or any part of one: nested mappings ending in blocks) as the file holds it."""
    if isinstance(section, ShotBlock):
        return section.to_json()
    return {name: section_json(inner) for name, inner in section.items()}


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
        out: dict[str, Any] = self.sections.to_json()
        out["configs"] = {name: t.to_json() for name, t in self.configs.items()}
        out["model"] = {
            "name": self.model.name,
            "model_args": self.model.model_args,
            "identity": self.model.identity,
            "batch_size": self.model.batch_size,
        }
        out.update({key: getattr(self, key) for key in _PLAIN})
        for key in _OPTIONAL:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, data: Any) -> RunRecord:
        """The record of a results.json content; a pydantic ValidationError names the field that is not what
        audioeval writes (results/run_files.py turns it into one line naming the file)."""
        checked: dict[str, Any] = results_adapter().validate_python(data)
        sections = Sections(**{key: checked.get(key, {}) for key in _SECTIONS})
        rest: dict[str, Any] = {key: checked.get(key, _DEFAULTS.get(key)) for key in (*_PLAIN, *_OPTIONAL)}
        return cls(sections=sections, configs=checked["configs"], model=checked["model"], **rest)


_SECTIONS = tuple(f.name for f in fields(Sections))
_OPTIONAL = ("robustness", "reports", "speech")
_PLAIN = tuple(
    f.name for f in fields(RunRecord) if f.name not in ("sections", "configs", "model", *_OPTIONAL)
)
_DEFAULTS: dict[str, Any] = {"warnings": [], "unscored_tasks": [], "judges_down": []}


class ResultsFile(TypedDict):
    """results.json, key by key (the order RunRecord.to_json writes)."""

    results: dict[str, PerK]
    groups: dict[str, PerK]
    facets: NotRequired[dict[str, FacetBlocks]]
    pooled: NotRequired[dict[str, PerK]]
    reference_models: NotRequired[dict[str, dict[str, PerK]]]
    configs: dict[str, TaskRecord]
    model: ModelRecord
    judges: dict[str, Any] | None
    augment: dict[str, Any] | None
    seed: int
    num_fewshot: list[int] | None
    task_args: dict[str, Any]
    limit: str | None
    bootstrap_resamples: int
    world_size: int
    versions: dict[str, str | None]
    git_commit: str | None
    date: str
    timing: dict[str, Any]
    warnings: NotRequired[list[str]]
    unscored_tasks: NotRequired[list[str]]
    judges_down: NotRequired[list[str]]
    robustness: NotRequired[dict[str, Any]]
    reports: NotRequired[list[str]]
    speech: NotRequired[dict[str, Any]]


_ADAPTER: Any = None


def results_adapter() -> Any:
    """The pydantic TypeAdapter of `ResultsFile` (made once, on first use: pydantic is imported only by
    readers)."""
    global _ADAPTER
    if _ADAPTER is None:
        from pydantic import TypeAdapter

        _ADAPTER = TypeAdapter(ResultsFile)
    return _ADAPTER
