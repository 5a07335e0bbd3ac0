"""What `--augment NAME[=LEVEL,...]` (repeatable) and `--augment_target` ask for.

Repeated flags chain their transforms in the order given (`--augment reverb_rt60=0.6 --augment noise_snr=10`:
reverberation, then noise). One of them may list several levels: that is the sweep, and every level is a
condition of its own. A run evaluates each task clean and under every condition.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from audioeval.augment.catalogue import TRANSFORMS, Transform
from audioeval.errors import UsageError, unknown_name_message

TARGETS = {
    "query": "the query's clips only (the demonstrations stay clean)",
    "demos": "the demonstrations' clips and the context clips shown before them (the query stays clean)",
    "all": "every clip of the episode",
}
AUGMENT_VERSION = 1  # bump when a transform's output for the same key and level changes
CONDITION_SEPARATOR = "@"  # <task>@<condition>: the name a degraded copy of a task is reported under


def format_level(level: float) -> str:
    return str(int(level)) if float(level).is_integer() else f"{level:g}"


@dataclass(frozen=True)
class Step:
    transform: str
    level: float | None

    @property
    def label(self) -> str:
        return self.transform if self.level is None else f"{self.transform}={format_level(self.level)}"

    @property
    def spec(self) -> Transform:
        return TRANSFORMS[self.transform]


@dataclass(frozen=True)
class Condition:
    """One chain of transforms at fixed levels, applied to the target clips of every episode."""

    steps: tuple[Step, ...]
    target: str

    @property
    def name(self) -> str:
        return "+".join(s.label for s in self.steps)

    def task_name(self, task: str) -> str:
        return f"{task}{CONDITION_SEPARATOR}{self.name}"

    def record(self) -> dict[str, Any]:
        """What results.json keeps so any clip can be regenerated (`Condition.from_record`)."""
        from importlib import metadata

        return {
            "condition": self.name,
            "target": self.target,
            "steps": [
                {"transform": s.transform, "level": s.level, "unit": s.spec.unit, "summary": s.spec.summary}
                for s in self.steps
            ],
            "seeding": "per clip: (episode seed, builder/config, episode, clip slot, clip role, transform)",
            "version": AUGMENT_VERSION,
            "audiomentations": metadata.version("audiomentations"),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Condition:
        steps = tuple(Step(s["transform"], s["level"]) for s in record["steps"])
        return cls(steps, record["target"])


@dataclass(frozen=True)
class AugmentPlan:
    conditions: tuple[Condition, ...]
    target: str
    swept: str | None  # the transform whose levels the conditions step through

    def record(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "swept": self.swept,
            "conditions": [c.name for c in self.conditions],
            "task_names": f"<task>{CONDITION_SEPARATOR}<condition>; the clean run keeps the plain task name",
        }


def catalogue_text() -> str:
    return "; ".join(f"{t.name} ({t.accepted()})" for t in TRANSFORMS.values())


def catalogue_listing() -> str:
    """`--augment list`: every transform with its levels and what it needs."""
    lines = ["transform | levels | what it does", "---|---|---"]
    for t in TRANSFORMS.values():
        needs = f" (needs `pip install {t.requires[0]}`)" if t.requires else ""
        lines.append(f"{t.name} | {t.accepted()} | {t.summary}{needs}")
    lines.append("")
    lines.append("--augment_target: " + "; ".join(f"{k}: {v}" for k, v in TARGETS.items()))
    return "\n".join(lines)


def _shown(text: str, limit: int = 60) -> str:
    """A user's value as an error message quotes it: whole when short, cut with its length when not."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _parse_flag(text: str) -> tuple[str, list[float | None]]:
    if not text.strip():
        raise UsageError(
            f"--augment is given an empty value; name a transform, e.g. --augment noise_snr=15. "
            f"Accepted transforms and levels: {catalogue_text()}."
        )
    name, sep, levels_text = text.strip().partition("=")
    name = name.strip()
    if name not in TRANSFORMS:
        raise UsageError(
            "--augment: "
            + unknown_name_message("transform", _shown(name), TRANSFORMS)
            + f" Accepted transforms and levels: {catalogue_text()}."
        )
    spec = TRANSFORMS[name]
    if not sep:
        if spec.takes_level:
            raise UsageError(
                f"--augment {name} needs a level: {spec.accepted()}, e.g. {name}={_example(spec)}."
            )
        return name, [None]
    if not spec.takes_level:
        raise UsageError(f"--augment {name} takes no level; write --augment {name}.")
    levels: list[float | None] = []
    for raw in levels_text.split(","):
        try:
            level = float(raw)
        except ValueError:
            raise UsageError(
                f"--augment {_shown(text)}: level {_shown(raw)!r} is not a number; {name} takes {spec.accepted()}."
            ) from None
        problem = spec.level_error(level)
        if problem is not None:
            raise UsageError(
                f"--augment {_shown(text)}: level {_shown(raw)} is out of range; {name} takes {problem}."
            )
        if level in levels:
            raise UsageError(f"--augment {_shown(text)}: level {_shown(raw)} is listed twice.")
        levels.append(level)
    return name, levels


def _example(spec: Transform) -> str:
    if spec.choices is not None:
        return format_level(spec.choices[len(spec.choices) // 2])
    assert spec.low is not None and spec.high is not None
    return format_level(round((spec.low + spec.high) / 2, 1 if not spec.integer else 0))


def check_dependencies(names: list[str]) -> None:
    """Preflight: a transform whose optional package is missing fails before any work, naming the package."""
    for name in names:
        requires = TRANSFORMS[name].requires
        if requires is None:
            continue
        package, module = requires
        if importlib.util.find_spec(module) is None:
            raise UsageError(
                f"--augment {name} needs the Python package {package!r}, which is not installed. Install it with "
                f"`pip install {package}` (or `pip install 'audioeval[augment]'`)."
            )


def parse_augment(flags: list[str], target: str | None = None) -> AugmentPlan | None:
    """The plan for a run or a build; None when no --augment was given. The target defaults to the query."""
    if not flags:
        if target is not None:
            raise UsageError(
                "--augment_target given without --augment: say which transform degrades the clips, e.g. "
                "--augment noise_snr=10 --augment_target demos (`--augment list` shows them)."
            )
        return None
    target = "query" if target is None else target
    if target not in TARGETS:
        raise UsageError(
            f"--augment_target {target!r}: choose one of "
            + "; ".join(f"{k} ({v})" for k, v in TARGETS.items())
            + "."
        )
    parsed = [_parse_flag(f) for f in flags]
    names = [n for n, _ in parsed]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(
            f"--augment {repeated[0]} is given twice; list its levels in one flag: {repeated[0]}=A,B,C."
        )
    swept = [n for n, levels in parsed if len(levels) > 1]
    if len(swept) > 1:
        raise UsageError(
            f"--augment: both {swept[0]} and {swept[1]} list several levels; sweep one transform per run "
            "(give the others one level each)."
        )
    check_dependencies(names)
    sweep_levels = next((levels for _, levels in parsed if len(levels) > 1), [None])
    conditions = []
    for sweep_level in sweep_levels:
        steps = tuple(Step(name, sweep_level if len(levels) > 1 else levels[0]) for name, levels in parsed)
        conditions.append(Condition(steps, target))
    return AugmentPlan(tuple(conditions), target, swept[0] if swept else None)
