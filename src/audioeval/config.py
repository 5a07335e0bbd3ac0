"""Task and group configurations: YAML files read with yaml.safe_load and validated field by field."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from audioeval.errors import ConfigError, close_matches

TASK_KEYS = {
    "task": "name of the task (required)",
    "include": "a YAML file (relative to this one) whose keys this file extends",
    "group": "group name or list of group names the task belongs to",
    "version": "version of the task definition; bump it when prompts, data or scoring change",
    "description": "one line shown by --tasks list",
    "builder": "dataset builder: a folder name in datasets_builders/ or a path to a .py file",
    "builder_config": "the builder's config name",
    "builder_kwargs": "keyword arguments for the builder config",
    "split": "dataset split (default: test)",
    "num_fewshot": "default list of shot counts k",
    "min_shots": "smallest allowed k (default 0)",
    "templates": "prompt templates: system/demo/demo_answer/query, or one whole-prompt template `prompt`",
    "target": "Jinja expression string for the reference answer, e.g. '{{ query.label }}'",
    "label_space": "list of labels, or a Jinja expression giving the list per episode (used by `chance`)",
    "parser": "the response parser (registered name, module:function or ./file.py:function), or {name: ..., args: {...}}",
    "metrics": "list of evaluate metric modules from metrics/: names or {name: ..., args: {...}}",
    "aggregation": "per-sample score (or glob such as score@*) -> aggregation: mean, {ratio: [numerator, "
    "denominator]} or {stratified_mean: [stratum, weight]}",
    "higher_is_better": "per-metric direction, e.g. {wer: false}",
    "generation_kwargs": "generation settings passed to the model (merged with --gen_kwargs)",
    "parameters": "task parameters settable with --task_args",
    "judge": "LLM judge settings: {templates: {...}, roles: ...}",
    "report": "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
    "metadata": "free-form information kept in results.json",
    "facets": "episode metadata fields (dotted for nested, e.g. variation.gender) whose values every metric is "
    "also aggregated by, with CIs (results.json `facets`)",
    "reference_models": "offline models (e.g. shortcut) also scored on the run's own episodes, whatever --model is "
    "(results.json `reference_models`)",
}

GROUP_KEYS = {
    "group": "name of the group (required)",
    "task": "list of member tasks or groups",
    "description": "one line shown by --tasks list",
    "aggregate_metrics": "metrics averaged over the member tasks (names or globs such as score@*; default: those every "
    "member reports)",
    "facet_aggregation": "how the group aggregates its tasks' facets: mean_of_tasks (default: the unweighted mean "
    "of the tasks' values, like the group's own numbers) or pooled_mean (the plain mean over all the tasks' samples "
    "with that value)",
    "report": "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
    "version": "version of the group definition",
    "metadata": "free-form information kept in results.json",
}

TEMPLATE_KEYS = {"system", "demo", "demo_answer", "query", "prompt"}
PARAMETER_KEYS = {"default", "type", "choices", "help", "builder_kwarg", "min_shots"}
PARAMETER_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def _line_of(text: str, key: str) -> int | None:
    match = re.search(rf"^\s*{re.escape(key)}\s*:", text, flags=re.MULTILINE)
    return text[: match.start()].count("\n") + 1 if match else None


def _where(path: Path, text: str, key: str) -> str:
    line = _line_of(text, key)
    return f"{path}:{line}" if line else str(path)


def read_text_file(path: Path, what: str) -> str:
    """A task file's text; anything but UTF-8 is an error naming the file and line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: the {what} is not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}). "
            "Save the file as UTF-8."
        ) from err


def read_yaml(path: Path) -> tuple[dict[str, Any], str]:
    text = read_text_file(path, "YAML file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(err, 'problem', err)}. Fix the syntax.") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values at the top level.")
    return data, text


@dataclass
class TaskParameter:
    name: str
    default: Any
    type: str = "str"
    choices: list[Any] | None = None
    help: str = ""
    builder_kwarg: str | None = None
    min_shots: dict[Any, int] = field(default_factory=dict)  # value -> smallest k the task allows with it

    def coerce(self, value: Any, source: str) -> Any:
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            value = None
        elif self.type != "str" or not isinstance(value, str):
            cast = PARAMETER_TYPES[self.type]
            try:
                if cast is bool and isinstance(value, str):
                    if value.lower() not in ("true", "false"):
                        raise ValueError(value)
                    value = value.lower() == "true"
                else:
                    value = cast(value)
            except (TypeError, ValueError) as err:
                raise ConfigError(
                    f"{source}: parameter {self.name!r} expects {self.type}, got {value!r}."
                ) from err
        if self.choices is not None and value not in self.choices:
            shown = ", ".join("null" if c is None else str(c) for c in self.choices)
            raise ConfigError(f"{source}: parameter {self.name!r} must be one of: {shown}; got {value!r}.")
        return value


# Parameters every task has, whatever its YAML declares.
CORE_PARAMETERS = {
    "dataset": TaskParameter(
        name="dataset",
        default=None,
        help="read the episodes from a folder written by `audioeval build` or a Hugging Face dataset "
        "(org/name, org/name@revision) instead of generating them; the run records the revision it read",
    ),
}


@dataclass
class TaskConfig:
    name: str
    path: Path
    raw: dict[str, Any]
    groups: list[str]
    version: Any
    description: str
    builder: str
    builder_config: str | None
    builder_kwargs: dict[str, Any]
    split: str
    num_fewshot: list[int]
    min_shots: int
    templates: dict[str, Path]
    target: str
    label_space: list[str] | str | None
    parser: dict[str, Any]
    metrics: list[dict[str, Any]]
    aggregation: dict[str, Any]
    higher_is_better: dict[str, bool]
    generation_kwargs: dict[str, Any]
    parameters: dict[str, TaskParameter]
    judge: dict[str, Any] | None
    report: str | None
    metadata: dict[str, Any]
    facets: tuple[str, ...] = ()
    reference_models: tuple[str, ...] = ()
    param_values: dict[str, Any] = field(default_factory=dict)
    min_shots_reason: str = ""  # the parameter value that raised min_shots, e.g. "prompt_style=null"
    origins: dict[str, Path] = field(default_factory=dict)  # key -> folder of the file that declares it

    @property
    def directory(self) -> Path:
        return self.path.parent

    def dir_of(self, key: str) -> Path:
        """The folder that relative paths in `key` (builder, templates, metrics, judge) are resolved against:
        that of the file declaring the key, which differs from this file's when it comes through `include:`."""
        return self.origins.get(key, self.directory)

    def with_params(self, overrides: dict[str, Any], source: str) -> TaskConfig:
        """A copy with task parameters resolved (defaults + overrides) and pushed into builder kwargs."""
        values = {}
        for name, spec in self.parameters.items():
            raw = overrides.get(name, spec.default)
            values[name] = spec.coerce(raw, source if name in overrides else str(self.path))
        kwargs = dict(self.builder_kwargs)
        for name, spec in self.parameters.items():
            if spec.builder_kwarg:
                kwargs[spec.builder_kwarg] = values[name]
        clone = TaskConfig(**{**self.__dict__})
        clone.param_values = values
        clone.builder_kwargs = kwargs
        for name, spec in self.parameters.items():
            needed = spec.min_shots.get(values[name], 0)
            if needed > clone.min_shots:
                shown = "null" if values[name] is None else values[name]
                clone.min_shots, clone.min_shots_reason = needed, f"{name}={shown}"
        return clone

    def resolved(self) -> dict[str, Any]:
        """The configuration as it runs: YAML keys, parameter values and template texts."""
        data = {k: v for k, v in self.raw.items() if k != "include"}
        data["builder_kwargs"] = self.builder_kwargs
        data["parameters"] = {k: v for k, v in self.param_values.items()}
        data["template_texts"] = {k: read_text_file(p, "template") for k, p in sorted(self.templates.items())}
        return data

    def content_hash(self) -> str:
        blob = json.dumps(self.resolved(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class GroupConfig:
    name: str
    path: Path | None
    members: list[str]
    description: str = ""
    aggregate_metrics: list[str] | None = None
    report: str | None = None
    version: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    facet_aggregation: str = "mean_of_tasks"


FACET_AGGREGATIONS = ("mean_of_tasks", "pooled_mean")


def _check_keys(data: dict[str, Any], allowed: dict[str, str], path: Path, text: str, what: str) -> None:
    for key in data:
        if key not in allowed:
            hints = close_matches(str(key), allowed)
            hint = (
                f" Did you mean {', '.join(hints)}?"
                if hints
                else f" Allowed keys: {', '.join(sorted(allowed))}."
            )
            raise ConfigError(f"{_where(path, text, str(key))}: unknown {what} key {key!r}.{hint}")


def _load_with_includes(
    path: Path, seen: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], str, dict[str, Path]]:
    """The merged keys, this file's text, and for each key the folder of the file that declares it (relative
    paths in a key resolve against that folder, so a file may include a task from another folder)."""
    data, text = read_yaml(path)
    origins = {key: path.parent for key in data}
    include = data.get("include")
    if include is None:
        return data, text, origins
    base_path = (path.parent / str(include)).resolve()
    if base_path in seen or base_path == path.resolve():
        raise ConfigError(f"{_where(path, text, 'include')}: include cycle through {base_path}.")
    if not base_path.is_file():
        raise ConfigError(f"{_where(path, text, 'include')}: included file {base_path} does not exist.")
    base, _, base_origins = _load_with_includes(base_path, seen + (path.resolve(),))
    return {**base, **data}, text, {**base_origins, **origins}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _named_spec(value: Any, where: str, what: str) -> dict[str, Any]:
    if isinstance(value, str):
        return {"name": value, "args": {}}
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        extra = set(value) - {"name", "args"}
        if extra:
            raise ConfigError(f"{where}: unknown key(s) {sorted(extra)} in {what}; use name and args.")
        args = value.get("args") or {}
        if not isinstance(args, dict):
            raise ConfigError(f"{where}: {what} args must be a mapping.")
        return {"name": value["name"], "args": args}
    raise ConfigError(f"{where}: {what} must be a name or a mapping with `name` and optional `args`.")


def load_task_config(path: Path) -> TaskConfig:
    path = path.resolve()
    data, text, origins = _load_with_includes(path)
    _check_keys(data, TASK_KEYS, path, text, "task")
    where = lambda key: _where(path, text, key)  # noqa: E731

    name = data.get("task")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise ConfigError(f"{where('task')}: `task` must be a name made of letters, digits, '_', '-' or '.'.")
    builder = data.get("builder")
    if not isinstance(builder, str):
        raise ConfigError(f"{where('builder')}: `builder` is required (a datasets_builders/ folder name).")

    templates_raw = data.get("templates")
    if not isinstance(templates_raw, dict) or not templates_raw:
        raise ConfigError(f"{where('templates')}: `templates` must map template roles to files.")
    unknown = set(templates_raw) - TEMPLATE_KEYS
    if unknown:
        raise ConfigError(
            f"{where('templates')}: unknown template role(s) {sorted(unknown)}; use {sorted(TEMPLATE_KEYS)}."
        )
    if "prompt" in templates_raw and len([k for k, v in templates_raw.items() if v]) > 1:
        raise ConfigError(
            f"{where('templates')}: give either one `prompt` template or system/demo/query templates."
        )
    if "prompt" not in templates_raw and "query" not in templates_raw:
        raise ConfigError(
            f"{where('templates')}: a `query` template (or a whole `prompt` template) is required."
        )
    templates: dict[str, Path] = {}
    for role, rel in templates_raw.items():
        if rel is None:
            continue
        tpath = (origins["templates"] / str(rel)).resolve()
        if not tpath.is_file():
            raise ConfigError(f"{where('templates')}: template {role!r} file {tpath} does not exist.")
        templates[role] = tpath

    shots = _as_list(data.get("num_fewshot", [0]))
    if not shots or not all(isinstance(k, int) and k >= 0 for k in shots):
        raise ConfigError(f"{where('num_fewshot')}: `num_fewshot` must be a list of non-negative integers.")
    min_shots = data.get("min_shots", 0)
    if not isinstance(min_shots, int) or min_shots < 0:
        raise ConfigError(f"{where('min_shots')}: `min_shots` must be a non-negative integer.")

    target = data.get("target")
    if not isinstance(target, str):
        raise ConfigError(f"{where('target')}: `target` is required, e.g. target: '{{{{ query.label }}}}'.")

    label_space = data.get("label_space")
    if label_space is not None and not isinstance(label_space, str | list):
        raise ConfigError(
            f"{where('label_space')}: `label_space` must be a list or a Jinja expression string."
        )
    if isinstance(label_space, list):
        label_space = [str(x) for x in label_space]

    parser = _named_spec(data.get("parser", "identity"), where("parser"), "parser")
    metrics = [_named_spec(m, where("metrics"), "metric") for m in _as_list(data.get("metrics"))]
    if not metrics:
        raise ConfigError(f"{where('metrics')}: at least one metric is required.")

    aggregation = data.get("aggregation") or {}
    if not isinstance(aggregation, dict):
        raise ConfigError(f"{where('aggregation')}: `aggregation` must map score names to an aggregation.")
    for key, agg in aggregation.items():
        ok = agg == "mean" or (
            isinstance(agg, dict)
            and len(agg) == 1
            and set(agg) <= {"ratio", "stratified_mean"}
            and isinstance(next(iter(agg.values())), list)
            and len(next(iter(agg.values()))) == 2
        )
        if not ok:
            raise ConfigError(
                f"{where('aggregation')}: aggregation of {key!r} must be `mean`, `{{ratio: [numerator, denominator]}}` "
                "or `{stratified_mean: [stratum, weight]}`."
            )

    parameters: dict[str, TaskParameter] = {}
    for pname, spec in (data.get("parameters") or {}).items():
        if not isinstance(spec, dict) or "default" not in spec:
            raise ConfigError(f"{where(str(pname))}: parameter {pname!r} needs at least a `default`.")
        bad = set(spec) - PARAMETER_KEYS
        if bad:
            raise ConfigError(f"{where(str(pname))}: parameter {pname!r} has unknown key(s) {sorted(bad)}.")
        ptype = spec.get("type", "str")
        if ptype not in PARAMETER_TYPES:
            raise ConfigError(
                f"{where(str(pname))}: parameter type must be one of {sorted(PARAMETER_TYPES)}."
            )
        floors = spec.get("min_shots") or {}
        if not isinstance(floors, dict) or not all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in floors.values()
        ):
            raise ConfigError(
                f"{where(str(pname))}: `min_shots` of parameter {pname!r} must map values to the smallest k "
                "allowed with them, e.g. {null: 1}."
            )
        unknown = [v for v in floors if spec.get("choices") is not None and v not in spec["choices"]]
        if unknown:
            raise ConfigError(
                f"{where(str(pname))}: `min_shots` of parameter {pname!r} names {unknown!r}, which is not "
                "among its choices."
            )
        parameters[str(pname)] = TaskParameter(
            name=str(pname),
            default=spec["default"],
            type=ptype,
            choices=spec.get("choices"),
            help=spec.get("help", ""),
            builder_kwarg=spec.get("builder_kwarg"),
            min_shots=dict(floors),
        )

    for pname, spec in CORE_PARAMETERS.items():
        if pname in parameters:
            raise ConfigError(
                f"{where(pname)}: parameter name {pname!r} is reserved: every task has it ({spec.help})."
            )
        parameters[pname] = spec

    for key in ("builder_kwargs", "generation_kwargs", "higher_is_better", "metadata"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ConfigError(f"{where(key)}: `{key}` must be a mapping.")
    judge = data.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise ConfigError(f"{where('judge')}: `judge` must be a mapping.")
    facets = data.get("facets") or []
    if not isinstance(facets, list) or not all(isinstance(f, str) and f.strip() for f in facets):
        raise ConfigError(
            f"{where('facets')}: `facets` must be a list of episode metadata field names, e.g. [domain]."
        )
    references = data.get("reference_models") or []
    if not isinstance(references, list) or not all(isinstance(m, str) and m.strip() for m in references):
        raise ConfigError(f"{where('reference_models')}: `reference_models` must be a list of model names.")
    report = data.get("report")
    if report is not None and (not isinstance(report, str) or not report.strip()):
        raise ConfigError(
            f"{where('report')}: `report` must be a registered report name, 'module:function' or "
            "'./file.py:function'."
        )

    return TaskConfig(
        name=name,
        path=path,
        raw=data,
        groups=[str(g) for g in _as_list(data.get("group"))],
        version=data.get("version", 0),
        description=str(data.get("description", "")),
        builder=builder,
        builder_config=data.get("builder_config"),
        builder_kwargs=dict(data.get("builder_kwargs") or {}),
        split=str(data.get("split", "test")),
        num_fewshot=[int(k) for k in shots],
        min_shots=min_shots,
        templates=templates,
        target=target,
        label_space=label_space,
        parser=parser,
        metrics=metrics,
        aggregation=aggregation,
        higher_is_better={str(k): bool(v) for k, v in (data.get("higher_is_better") or {}).items()},
        generation_kwargs=dict(data.get("generation_kwargs") or {}),
        parameters=parameters,
        judge=judge,
        report=report,
        metadata=dict(data.get("metadata") or {}),
        facets=tuple(facets),
        reference_models=tuple(references),
        origins=origins,
    )


def load_group_config(path: Path) -> GroupConfig:
    path = path.resolve()
    data, text = read_yaml(path)
    _check_keys(data, GROUP_KEYS, path, text, "group")
    name = data.get("group")
    if not isinstance(name, str):
        raise ConfigError(f"{_where(path, text, 'group')}: `group` must be a name.")
    members = data.get("task") or []
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise ConfigError(
            f"{_where(path, text, 'task')}: a group's `task` must be a list of task or group names."
        )
    agg = data.get("aggregate_metrics")
    if agg is not None and not (isinstance(agg, list) and all(isinstance(a, str) for a in agg)):
        raise ConfigError(
            f"{_where(path, text, 'aggregate_metrics')}: `aggregate_metrics` must be a list of names."
        )
    facet_aggregation = data.get("facet_aggregation", FACET_AGGREGATIONS[0])
    if facet_aggregation not in FACET_AGGREGATIONS:
        raise ConfigError(
            f"{_where(path, text, 'facet_aggregation')}: `facet_aggregation` must be one of "
            f"{', '.join(FACET_AGGREGATIONS)}, got {facet_aggregation!r}."
        )
    return GroupConfig(
        name=name,
        path=path,
        members=list(members),
        description=str(data.get("description", "")),
        aggregate_metrics=agg,
        report=data.get("report"),
        version=data.get("version"),
        metadata=dict(data.get("metadata") or {}),
        facet_aggregation=facet_aggregation,
    )


def is_group_file(data: dict[str, Any]) -> bool:
    """Group files list their members under `task`; task files name themselves there."""
    return isinstance(data.get("task"), list)
