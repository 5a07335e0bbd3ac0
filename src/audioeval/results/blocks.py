"""One `<k>-shot` block of results.json, typed: what every section (`results`, `groups`, `facets`, `pooled`,
`reference_models`) holds per shot count or shot setting.

In the file a block is flat, as lm-evaluation-harness writes its results: per metric `<metric>` (the value),
`<metric>_stderr`, `<metric>_ci95` (null where nothing measured an uncertainty), `<metric>_missing` (samples
without a value, when any) and `<metric>_unscored` (members of a group or pooled block without any value,
when any); then the block's own facts `n`, `errors` (when any) and `subtasks` (a group's or pooled block's
members). `ShotBlock.to_json` writes exactly that, in that order, and `ShotBlock.from_json` reads it back.
In memory a value that was not measured is None (NaN in the arithmetic, null in the file)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

_SUFFIXES = ("_stderr", "_ci95", "_missing", "_unscored")
_FACTS = ("n", "errors", "subtasks")


def finite(value: float | None) -> float | None:
    """None for NaN (what the arithmetic leaves where nothing was measured)."""
    return None if value is None or math.isnan(value) else float(value)


@dataclass
class MetricStats:
    """One metric of a block: its value, standard error and 95% CI (None where not measured), the samples
    without a value (`missing`, failed requests included) and, for a group or pooled block, the members
    without any value (`unscored`, left out of the value); `n` and `failures` come from the block."""

    value: float | None
    stderr: float | None = None
    ci95: tuple[float, float] | None = None
    missing: int = 0
    unscored: list[str] = field(default_factory=list)
    # set by the block that holds it (not written: the file has them as the block's `n` and `errors`)
    n: int = 0  # samples (items) with a value
    failures: int = 0  # failed requests among the block's samples (no answer: in `missing`)

    @classmethod
    def measured(
        cls,
        value: float,
        stderr: float,
        ci95: list[float] | None,
        missing: int = 0,
        unscored: list[str] | None = None,
    ) -> MetricStats:
        """From the arithmetic's numbers (NaN where nothing was measured)."""
        ci = None
        if ci95 is not None and not any(math.isnan(v) for v in ci95):
            ci = (float(ci95[0]), float(ci95[1]))
        return cls(finite(value), finite(stderr), ci, missing, list(unscored or []))


@dataclass
class ShotBlock:
    """A task's (or group's, facet value's, pooled setting's) numbers at one shot count: each metric in the
    order the run reports them, the samples (or items) it covers (`n`), the failed requests among them
    (`errors`) and, for a group or pooled block, its members (`subtasks`)."""

    metrics: dict[str, MetricStats]
    n: int
    errors: int = 0
    subtasks: list[str] | None = None

    def __post_init__(self) -> None:
        for stats in self.metrics.values():
            stats.n, stats.failures = self.n - stats.missing, self.errors

    def __contains__(self, metric: object) -> bool:
        return metric in self.metrics

    def get(self, metric: str) -> MetricStats | None:
        return self.metrics.get(metric)

    def __getitem__(self, metric: str) -> MetricStats:
        """`block["accuracy"].value` (`.stderr`, `.ci95`, `.missing`, `.n`, `.failures`); a KeyError lists the
        block's metrics."""
        try:
            return self.metrics[metric]
        except KeyError:
            raise KeyError(f"no metric {metric!r} in this block; it has {', '.join(self.metrics)}") from None

    def value(self, metric: str) -> float | None:
        stats = self.metrics.get(metric)
        return stats.value if stats else None

    def scored(self, metric: str) -> int:
        """Samples (items) with a value of `metric`."""
        stats = self.metrics.get(metric)
        return stats.n if stats else 0

    @property
    def main_metric(self) -> str | None:
        """The metric a compact table shows: the first reported that is not a failure rate."""
        names = list(self.metrics)
        return next((m for m in names if not m.endswith("failure_rate")), names[0] if names else None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, s in self.metrics.items():
            out[name] = s.value
            out[f"{name}_stderr"] = s.stderr
            out[f"{name}_ci95"] = list(s.ci95) if s.ci95 is not None else None
            if s.missing:
                out[f"{name}_missing"] = s.missing
            if s.unscored:
                out[f"{name}_unscored"] = list(s.unscored)
        out["n"] = self.n
        if self.errors:
            out["errors"] = self.errors
        if self.subtasks is not None:
            out["subtasks"] = list(self.subtasks)
        return out

    @classmethod
    def from_json(cls, data: Any) -> ShotBlock:
        """The block as results.json holds it; a ValueError names the key that is not what audioeval writes."""
        if not isinstance(data, dict):
            raise ValueError(f"a shot block is an object of metrics, not {type(data).__name__}")
        names = [k for k in data if k not in _FACTS and not k.endswith(_SUFFIXES)]
        metrics = {}
        for name in names:
            metrics[name] = MetricStats(
                _number(data[name], name),
                _number(data.get(f"{name}_stderr"), f"{name}_stderr"),
                _interval(data.get(f"{name}_ci95"), f"{name}_ci95"),
                _count(data.get(f"{name}_missing", 0), f"{name}_missing"),
                _names(data.get(f"{name}_unscored", []), f"{name}_unscored"),
            )
        strays = [k for k in data if k not in _FACTS and k not in names and _stat_of(k, names) is None]
        if strays:
            raise ValueError(f"`{strays[0]}` belongs to no metric of the block")
        if "n" not in data:
            raise ValueError("the block has no `n`")
        subtasks = data.get("subtasks")
        return cls(
            metrics,
            _count(data["n"], "n"),
            _count(data.get("errors", 0), "errors"),
            None if subtasks is None else _names(subtasks, "subtasks"),
        )

    @staticmethod
    def json_schema() -> dict[str, Any]:
        """The JSON Schema of a block as the file holds it."""
        number = {"type": ["number", "null"]}
        count = {"type": "integer", "minimum": 0}
        names = {"type": "array", "items": {"type": "string"}}
        return {
            "type": "object",
            "title": "ShotBlock",
            "description": "numbers at one shot count: per metric <metric>, <metric>_stderr, <metric>_ci95, "
            "<metric>_missing, <metric>_unscored; then n, errors, subtasks",
            "properties": {"n": count, "errors": count, "subtasks": names},
            "required": ["n"],
            "patternProperties": {
                "_stderr$": number,
                "_ci95$": {
                    "anyOf": [
                        {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                        {"type": "null"},
                    ]
                },
                "_missing$": count,
                "_unscored$": names,
            },
            "additionalProperties": number,
        }

    @classmethod
    def __get_pydantic_core_schema__(cls, _source: Any, _handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            lambda v: v if isinstance(v, ShotBlock) else cls.from_json(v),
            ref="ShotBlock",
            serialization=core_schema.plain_serializer_function_ser_schema(lambda b: b.to_json()),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, _core_schema: Any, _handler: Any) -> dict[str, Any]:
        return cls.json_schema()


#: `<k>-shot` (or a shot setting such as `few-shot`) -> block
PerK = dict[str, ShotBlock]
#: facet -> value -> per-k blocks
FacetBlocks = dict[str, dict[str, PerK]]


def shot_key(k: int) -> str:
    return f"{k}-shot"


def shot_count(key: str) -> int | None:
    """k of a `<k>-shot` key; None for a named setting (`few-shot`)."""
    head, _, tail = key.partition("-")
    return int(head) if head.isdigit() and tail == "shot" else None


def by_shots(per_k: PerK) -> dict[int, ShotBlock]:
    """The `<k>-shot` blocks by k, in k order (named settings left out)."""
    found = {k: block for key, block in per_k.items() if (k := shot_count(key)) is not None}
    return dict(sorted(found.items()))


def _stat_of(key: str, metrics: list[str]) -> str | None:
    """The metric a statistics key belongs to (`acc_ci95` -> `acc`) when that metric is in the block."""
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and key[: -len(suffix)] in metrics:
            return key[: -len(suffix)]
    return None


def _number(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"`{key}` is {type(value).__name__}, not a number or null")
    return finite(float(value))


def _count(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{key}` is {value!r}, not a count")
    return value


def _interval(value: Any, key: str) -> tuple[float, float] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"`{key}` is {value!r}, not [low, high] or null")
    low, high = (_number(v, key) for v in value)
    return None if low is None or high is None else (low, high)


def _names(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"`{key}` is {value!r}, not a list of names")
    return list(value)
