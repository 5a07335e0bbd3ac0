"""A group's `pooled:` rule: metrics pooled over the items of all the group's tasks, per shot setting.

    pooled:
      metrics: [format_strict, "format_strict_*"]        # names or globs of per-sample scores
      settings: {zero-shot: [0], one-shot: [1], few-shot: {min: 1}}

An item is one episode of one task. Per setting, each item's value is the mean of its scores at the setting's
shot counts (a list of k, or `{min: k}` for every evaluated k from there up); the items of every task of the
group are pooled, and the mean gets a bootstrap CI over items (results.json `pooled[group][setting]`).
A paper table that pools items over tasks (format compliance per stage and shot setting, say) is this rule,
declared in the benchmark's group YAML; its report then only reads the numbers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audioeval.config.fields import Problem


@dataclass(frozen=True)
class ShotSetting:
    ks: tuple[int, ...] = ()  # these k
    min_k: int | None = None  # or every k >= min_k

    def holds(self, k: int) -> bool:
        return k in self.ks if self.min_k is None else k >= self.min_k


@dataclass(frozen=True)
class PooledRule:
    metrics: tuple[str, ...]
    settings: dict[str, ShotSetting]


def read_pooled(value: Any) -> PooledRule | None:
    """The rule as a group file declares it; Problem (worded for the `pooled` key) when it is malformed."""
    if value is None or isinstance(value, PooledRule):
        return value
    if not isinstance(value, dict) or set(value) != {"metrics", "settings"}:
        raise Problem("`pooled` must be a mapping with `metrics` and `settings`.")
    metrics = value["metrics"]
    if not isinstance(metrics, list) or not metrics or not all(isinstance(m, str) and m for m in metrics):
        raise Problem("`pooled.metrics` must be a list of metric names or globs.")
    settings = value["settings"]
    if not isinstance(settings, dict) or not settings:
        raise Problem("`pooled.settings` must map setting names to shot counts, e.g. {one-shot: [1]}.")
    return PooledRule(tuple(metrics), {str(n): _setting(str(n), s) for n, s in settings.items()})


def _setting(name: str, spec: Any) -> ShotSetting:
    if isinstance(spec, list) and spec and all(_is_k(k) for k in spec):
        return ShotSetting(ks=tuple(spec))
    if isinstance(spec, dict) and set(spec) == {"min"} and _is_k(spec["min"]):
        return ShotSetting(min_k=spec["min"])
    raise Problem(
        f"pooled setting {name!r} must be a list of shot counts such as [1] or {{min: 1}} "
        f"(every evaluated k from 1 up), got {spec!r}."
    )


def _is_k(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
