"""What a run evaluated, read back from its results.json: the benchmark behind each task and group, the names
to pass to `--tasks`, and the command line that reproduces the run (local paths as placeholders, secrets
masked)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from audioeval.augment.plan import CONDITION_SEPARATOR
from audioeval.redact import MASK, is_secret_name, redact_message
from audioeval.results.record import RunRecord
from audioeval.results.stats import DEFAULT_RESAMPLES


def base_name(name: str) -> str:
    """A task or group without its robustness condition (`task@noise_snr=10` -> `task`)."""
    return name.split(CONDITION_SEPARATOR, 1)[0]


def benchmark_of_task(record: RunRecord, task: str) -> str:
    """The benchmark a task belongs to: its builder's name (a builder file's stem)."""
    return Path(record.configs[task].builder or task).stem


def group_members(record: RunRecord) -> dict[str, set[str]]:
    """Every group of the run (its `groups` and `pooled` sections) -> the tasks it covers."""
    blocks = {**record.sections.pooled, **record.sections.groups}
    direct = {g: {s for block in per_k.values() for s in block.subtasks or []} for g, per_k in blocks.items()}

    def leaves(name: str, seen: frozenset[str]) -> set[str]:
        if name not in direct or name in seen:
            return {name} if name in record.configs else set()
        return {t for s in direct[name] for t in leaves(s, seen | {name})}

    return {g: leaves(g, frozenset()) for g in direct}


def benchmarks_of(record: RunRecord, name: str, members: dict[str, set[str]]) -> set[str]:
    tasks = members.get(name, {name} if name in record.configs else set())
    return {benchmark_of_task(record, t) for t in tasks}


def selected_names(record: RunRecord) -> list[str]:
    """What `--tasks` named, as far as results.json tells: the outermost groups, then the tasks no group
    covers (robustness conditions stripped: `--augment` makes them)."""
    members = group_members(record)
    top: list[str] = []
    for g, tasks in members.items():
        inside = [o for o, other in members.items() if o != g and tasks <= other]
        if any(members[o] != tasks or list(members).index(o) < list(members).index(g) for o in inside):
            continue  # within a larger group, or the same tasks as a group listed earlier
        top.append(g)
    covered = {t for g in top for t in members[g]}
    names = [base_name(g) for g in top] + [base_name(t) for t in record.configs if t not in covered]
    return list(dict.fromkeys(names))


def looks_local(value: Any) -> bool:
    """A value that names something on the machine the run ran on (a Hub id `org/name` is not)."""
    if not isinstance(value, str) or not value:
        return False
    return value.startswith(("/", "~", "./", "../", "\\")) or (len(value) > 2 and value[1:3] in (":\\", ":/"))


def _kv(values: dict[str, Any]) -> str:
    parts = []
    for key, value in values.items():
        if is_secret_name(key):
            value = MASK
        elif looks_local(value):
            value = f"<{key}>"
        parts.append(f"{key}={'none' if value is None else value}")
    return ",".join(parts)


def reproduce_command(record: RunRecord, logged_samples: bool) -> str:
    """The `audioeval` command line that runs this evaluation again, from what results.json records."""
    model = record.model
    args = ["audioeval", "--tasks", ",".join(selected_names(record)), "--model", model.name]
    if model.model_args:
        args += ["--model_args", _kv(model.model_args)]
    if record.num_fewshot:
        args += ["--num_fewshot", ",".join(str(k) for k in record.num_fewshot)]
    if record.task_args:
        args += ["--task_args", _kv(record.task_args)]
    if record.limit is not None:
        args += ["--limit", str(record.limit)]
    args += ["--seed", str(record.seed)]
    if record.bootstrap_resamples != DEFAULT_RESAMPLES:
        args += ["--bootstrap_iters", str(record.bootstrap_resamples)]
    args += _include_paths(record) + _judge_flags(record) + _augment_flags(record) + _speech_flags(record)
    if logged_samples:
        args.append("--log_samples")
    args += ["--output_path", "<results folder>"]
    return redact_message(" ".join(shlex.quote(a) for a in args))


def _include_paths(record: RunRecord) -> list[str]:
    """Tasks whose builder is a file next to their YAML come from an --include_path folder."""
    local = [t for t, config in record.configs.items() if looks_local(config.builder)]
    folders = dict.fromkeys(f"<task folder of {benchmark_of_task(record, t)}>" for t in local)
    return [a for folder in folders for a in ("--include_path", folder)]


def _judge_flags(record: RunRecord) -> list[str]:
    """--judge and --judge_args of each judge, from the identity its results.json entry records."""
    out: list[str] = []
    for judge_id, judge in (record.judges or {}).items():
        identity = (judge.get("identity") or {}) if isinstance(judge, dict) else {}
        backend = str(identity["model"]) if isinstance(identity.get("model"), str) else "<judge backend>"
        settings = {"model": identity.get("endpoint_model"), "base_url": identity.get("base_url")}
        judge_args = {k: v for k, v in settings.items() if v} | {"id": judge_id}
        out += ["--judge", backend, "--judge_args", _kv(judge_args)]
    return out


def _augment_flags(record: RunRecord) -> list[str]:
    """--augment NAME=LEVEL,... from the conditions the tasks record (one transform may be swept)."""
    levels: dict[str, list[str]] = {}
    target = None
    for condition in (task.augment for task in record.configs.values()):
        if condition is None:
            continue
        target = condition.get("target", target)
        for step in condition.get("steps", []):
            level = step.get("level")
            shown = levels.setdefault(str(step.get("transform")), [])
            if level is not None and str(level) not in shown:
                shown.append(str(level))
    if not levels:
        return []
    flags = [
        a for name, ls in levels.items() for a in ("--augment", f"{name}={','.join(ls)}" if ls else name)
    ]
    return flags + (["--augment_target", str(target)] if target else [])


def _speech_flags(record: RunRecord) -> list[str]:
    speech = record.speech
    if speech is None:
        return []
    out = ["--asr", str(speech["asr"])] if speech.get("asr") else []
    if speech.get("spoken_text") and speech["spoken_text"] != "asr":
        out += ["--spoken_text", str(speech["spoken_text"])]
    return out
