"""What `audioeval compare` can compare, and whether it can pair: the tasks, k, groups and pooled settings
every run has, and whether the runs saw the same episodes (the same clips and targets for every sample they
both logged), so that their samples pair exactly by (task, episode, k; a condition is part of the task name).

Runs whose episodes differ (another --seed, --task_args, data folder, augmentation) are refused for pairing
with one line saying why; with `--unpaired` they are compared unpaired instead. Runs without sample logs are
compared unpaired from results.json, with a line saying pairing needs --log_samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audioeval.errors import UsageError
from audioeval.results.compare.runs import Run


@dataclass
class Plan:
    tasks: list[str]  # in every run, in the baseline's order
    shots: dict[str, list[str]]  # task -> the `<k>-shot` keys every run has
    groups: dict[str, list[str]]  # group -> its `<k>-shot` keys in every run
    pooled: dict[str, list[str]]  # group -> its pooled settings in every run
    paired: bool
    notes: list[str] = field(default_factory=list)  # said above the table


def plan(runs: list[Run], baseline: int, unpaired: bool) -> Plan:
    base = runs[baseline].record.sections
    tasks = [t for t in base.results if all(t in r.record.sections.results for r in runs)]
    if not tasks:
        raise UsageError(
            "the runs have no task in common ("
            + "; ".join(f"{r.label}: {', '.join(r.record.sections.results) or 'none'}" for r in runs)
            + "). Compare runs of the same tasks."
        )
    notes = _left_out(runs, tasks)
    shots = {t: _common_keys([r.record.sections.results[t] for r in runs]) for t in tasks}
    groups = {
        g: keys
        for g in base.groups
        if all(g in r.record.sections.groups for r in runs)
        and (keys := _common_keys([r.record.sections.groups[g] for r in runs]))
    }
    pooled = {
        g: keys
        for g in base.pooled
        if all(g in r.record.sections.pooled for r in runs)
        and (keys := _common_keys([r.record.sections.pooled[g] for r in runs]))
    }
    paired, why = _pairing(runs, baseline, tasks)
    if paired and unpaired:
        paired, why = False, "the runs could be paired; compared unpaired as asked"
    if not paired:
        if why.startswith("pairing needs"):
            notes.append(f"unpaired: {why}")
        elif not unpaired:
            raise UsageError(
                f"cannot pair the runs' samples: {why}. Pass --unpaired to compare them unpaired."
            )
        else:
            notes.append(f"unpaired (--unpaired): {why}")
    return Plan(tasks, shots, groups, pooled, paired, notes)


def _common_keys(per_ks: list[dict[str, Any]]) -> list[str]:
    return [key for key in per_ks[0] if all(key in per_k for per_k in per_ks)]


def _left_out(runs: list[Run], common: list[str]) -> list[str]:
    notes = []
    for run in runs:
        only = [t for t in run.record.sections.results if t not in common]
        if only:
            notes.append(f"left out (not in every run): {', '.join(only)} of {run.label}")
    return notes


def _pairing(runs: list[Run], baseline: int, tasks: list[str]) -> tuple[bool, str]:
    """(whether every run pairs with the baseline, and if not why, in a few words)."""
    missing = [r.label for r in runs if r.logged is None]
    if missing:
        return False, (
            f"pairing needs --log_samples: {', '.join(missing)} has no sample logs (rerun with --log_samples; "
            "answers come from the response cache)"
        )
    base = runs[baseline]
    for run in runs:
        if run is base:
            continue
        differ = _episode_difference(base, run, tasks)
        if differ:  # say why, when the recorded settings tell
            return False, f"{run.label} and {base.label} {_config_difference(base, run, tasks) or differ}"
    return True, ""


def _config_difference(base: Run, run: Run, tasks: list[str]) -> str | None:
    """What in the two runs' recorded settings makes their episodes differ, if anything does."""
    a, b = base.record, run.record
    if a.seed != b.seed:  # worded after "<run> and <baseline>": the run's seed first
        return f"ran with different --seed ({b.seed} vs {a.seed}): their episodes differ"
    for task in tasks:
        mine, theirs = a.configs.get(task), b.configs.get(task)
        if mine is None or theirs is None:
            continue
        for key in ("builder", "builder_config", "builder_kwargs"):
            if mine.config.get(key) != theirs.config.get(key):
                return f"built task {task}'s episodes differently (`{key}` differs: --task_args or the task YAML)"
        if (mine.dataset or {}) != (theirs.dataset or {}):
            return f"read task {task}'s episodes from different data (`configs.{task}.dataset` differs)"
        if mine.augment != theirs.augment:
            return f"degraded task {task}'s clips differently (`configs.{task}.augment` differs)"
    return None


def _episode_difference(base: Run, run: Run, tasks: list[str]) -> str | None:
    """Whether some sample both runs logged shows other clips or another target in one of them."""
    assert base.logged is not None and run.logged is not None
    for task in tasks:
        mine, theirs = base.logged.get(task), run.logged.get(task)
        if mine is None or theirs is None:
            continue
        differ = [
            k for k, digest in mine.episodes.items() if k in theirs.episodes and theirs.episodes[k] != digest
        ]
        if differ:
            episode, k = differ[0]
            return (
                f"logged different clips or targets for {len(differ)} of task {task}'s samples (first: episode "
                f"{episode} at k={k}): they did not see the same episodes"
            )
    return None


def prompt_note(runs: list[Run], baseline: int, tasks: list[str]) -> str | None:
    """A line when paired runs asked about the same episodes with different prompt text (a prompt change)."""
    base = runs[baseline]
    assert base.logged is not None
    for run in runs:
        if run is base or run.logged is None:
            continue
        differ = sum(
            1
            for t in tasks
            if t in base.logged and t in run.logged
            for key, digest in base.logged[t].requests.items()
            if key in run.logged[t].requests and run.logged[t].requests[key] != digest
        )
        if differ:
            return (
                f"{run.label} asked {differ} of the paired samples with another prompt text than {base.label} "
                "(same clips and targets): the differences include the prompt's effect"
            )
    return None
