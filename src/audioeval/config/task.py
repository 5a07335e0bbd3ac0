"""Task and group configurations: YAML files read with yaml.safe_load and validated field by field."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from audioeval.config.pooled import PooledRule, read_pooled
from audioeval.errors import ConfigError, close_matches

GROUP_KEYS = {
    "group": "name of the group (required)",
    "task": "list of member tasks or groups",
    "description": "one line shown by --tasks list",
    "aggregate_metrics": "metrics averaged over the member tasks (names or globs such as score@*; default: those every "
    "member reports)",
    "facet_aggregation": "how the group aggregates its tasks' facets: mean_of_tasks (default: the unweighted mean "
    "of the tasks' values, like the group's own numbers) or pooled_mean (the plain mean over all the tasks' samples "
    "with that value)",
    "pooled": "metrics pooled over the items of all the group's tasks per shot setting, with CIs: {metrics: [names "
    "or globs], settings: {name: [k, ...] or {min: k}}} (results.json `pooled`)",
    "report": "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
    "version": "version of the group definition",
    "metadata": "free-form information kept in results.json",
}

TEMPLATE_KEYS = {"system", "demo", "demo_answer", "query", "prompt"}
JUDGE_ROLE_KEYS = {"template", "verdict", "swap", "when", "max_tokens"}
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
    cluster: str | None = None  # episode metadata field: episodes with equal values share their data
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
    pooled: PooledRule | None = None


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


# ---- The task schema: one table of keys. TaskConfig's fields, load_task_config's validation and the key table
# in docs/architecture.md all come from TASK_SCHEMA (tests/core/test_task_schema.py fails when the doc drifts).


@dataclass(frozen=True)
class KeySite:
    """Where a key's value is read: its `file:line` for messages and the folder its relative paths resolve
    against (that of the file declaring the key, which differs from the task file's through `include:`)."""

    where: str
    folder: Path
    path: Path  # the task file and its text, to point at a line inside the key's value
    text: str

    def fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self.where}: {message}")

    def fail_at(self, inner_key: str, message: str) -> ConfigError:
        """An error pointing at the line of `inner_key` (a parameter name, say) when this file has one."""
        return ConfigError(f"{_where(self.path, self.text, inner_key)}: {message}")


@dataclass(frozen=True)
class TaskKey:
    name: str
    type: str  # as shown in the docs
    default: Any  # the value read when the key is absent; REQUIRED when it must be given
    help: str
    read: Callable[[Any, KeySite], Any]  # checks the YAML value and returns it as TaskConfig holds it
    attr: str | None  # the TaskConfig field it fills (None: consumed while loading, like `include`)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


def _read_name(value: Any, site: KeySite) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", value):
        raise site.fail("`task` must be a name made of letters, digits, '_', '-' or '.'.")
    return value


def _read_builder(value: Any, site: KeySite) -> str:
    if not isinstance(value, str):
        raise site.fail("`builder` is required (a datasets_builders/ folder name).")
    return value


def _read_mapping(key: str) -> Callable[[Any, KeySite], dict[str, Any]]:
    def read(value: Any, site: KeySite) -> dict[str, Any]:
        if value is not None and not isinstance(value, dict):
            raise site.fail(f"`{key}` must be a mapping.")
        return dict(value or {})

    return read


def _read_templates(value: Any, site: KeySite) -> dict[str, Path]:
    if not isinstance(value, dict) or not value:
        raise site.fail("`templates` must map template roles to files.")
    unknown = set(value) - TEMPLATE_KEYS
    if unknown:
        raise site.fail(f"unknown template role(s) {sorted(unknown)}; use {sorted(TEMPLATE_KEYS)}.")
    if "prompt" in value and len([k for k, v in value.items() if v]) > 1:
        raise site.fail("give either one `prompt` template or system/demo/query templates.")
    if "prompt" not in value and "query" not in value:
        raise site.fail("a `query` template (or a whole `prompt` template) is required.")
    templates: dict[str, Path] = {}
    for role, rel in value.items():
        if rel is None:
            continue
        tpath = (site.folder / str(rel)).resolve()
        if not tpath.is_file():
            raise site.fail(f"template {role!r} file {tpath} does not exist.")
        templates[role] = tpath
    return templates


def _read_shots(value: Any, site: KeySite) -> list[int]:
    shots = _as_list(value)
    if not shots or not all(isinstance(k, int) and k >= 0 for k in shots):
        raise site.fail("`num_fewshot` must be a list of non-negative integers.")
    return [int(k) for k in shots]


def _read_min_shots(value: Any, site: KeySite) -> int:
    if not isinstance(value, int) or value < 0:
        raise site.fail("`min_shots` must be a non-negative integer.")
    return value


def _read_target(value: Any, site: KeySite) -> str:
    if not isinstance(value, str):
        raise site.fail("`target` is required, e.g. target: '{{ query.label }}'.")
    return value


def _read_label_space(value: Any, site: KeySite) -> list[str] | str | None:
    if value is not None and not isinstance(value, str | list):
        raise site.fail("`label_space` must be a list or a Jinja expression string.")
    return [str(x) for x in value] if isinstance(value, list) else value


def _read_parser(value: Any, site: KeySite) -> dict[str, Any]:
    return _named_spec(value, site.where, "parser")


def _read_metrics(value: Any, site: KeySite) -> list[dict[str, Any]]:
    metrics = [_named_spec(m, site.where, "metric") for m in _as_list(value)]
    if not metrics:
        raise site.fail("at least one metric is required.")
    return metrics


def _read_aggregation(value: Any, site: KeySite) -> dict[str, Any]:
    aggregation = value or {}
    if not isinstance(aggregation, dict):
        raise site.fail("`aggregation` must map score names to an aggregation.")
    for key, agg in aggregation.items():
        ok = agg == "mean" or (
            isinstance(agg, dict)
            and len(agg) == 1
            and set(agg) <= {"ratio", "stratified_mean"}
            and isinstance(next(iter(agg.values())), list)
            and len(next(iter(agg.values()))) == 2
        )
        if not ok:
            raise site.fail(
                f"aggregation of {key!r} must be `mean`, `{{ratio: [numerator, denominator]}}` "
                "or `{stratified_mean: [stratum, weight]}`."
            )
    return aggregation


def _read_directions(value: Any, site: KeySite) -> dict[str, bool]:
    return {str(k): bool(v) for k, v in _read_mapping("higher_is_better")(value, site).items()}


def _read_parameters(value: Any, site: KeySite) -> dict[str, TaskParameter]:
    parameters: dict[str, TaskParameter] = {}
    for pname, spec in _read_mapping("parameters")(value, site).items():
        parameters[str(pname)] = _read_parameter(str(pname), spec, site)
    for pname, core in CORE_PARAMETERS.items():
        if pname in parameters:
            raise site.fail_at(
                pname, f"parameter name {pname!r} is reserved: every task has it ({core.help})."
            )
        parameters[pname] = core
    return parameters


def _read_parameter(pname: str, spec: Any, site: KeySite) -> TaskParameter:
    if not isinstance(spec, dict) or "default" not in spec:
        raise site.fail_at(pname, f"parameter {pname!r} needs at least a `default`.")
    bad = set(spec) - PARAMETER_KEYS
    if bad:
        raise site.fail_at(pname, f"parameter {pname!r} has unknown key(s) {sorted(bad)}.")
    ptype = spec.get("type", "str")
    if ptype not in PARAMETER_TYPES:
        raise site.fail_at(pname, f"parameter type must be one of {sorted(PARAMETER_TYPES)}.")
    floors = spec.get("min_shots") or {}
    if not isinstance(floors, dict) or not all(
        isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in floors.values()
    ):
        raise site.fail_at(
            pname,
            f"`min_shots` of parameter {pname!r} must map values to the smallest k allowed with them, "
            "e.g. {null: 1}.",
        )
    unknown = [v for v in floors if spec.get("choices") is not None and v not in spec["choices"]]
    if unknown:
        raise site.fail_at(
            pname, f"`min_shots` of parameter {pname!r} names {unknown!r}, which is not among its choices."
        )
    return TaskParameter(
        name=pname,
        default=spec["default"],
        type=ptype,
        choices=spec.get("choices"),
        help=spec.get("help", ""),
        builder_kwarg=spec.get("builder_kwarg"),
        min_shots=dict(floors),
    )


def _read_cluster(value: Any, site: KeySite) -> str | None:
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise site.fail("`cluster` must be an episode metadata field name, e.g. item_id.")
    return value


def _read_facets(value: Any, site: KeySite) -> tuple[str, ...]:
    facets = value or []
    if not isinstance(facets, list) or not all(isinstance(f, str) and f.strip() for f in facets):
        raise site.fail("`facets` must be a list of episode metadata field names, e.g. [domain].")
    if len(set(facets)) != len(facets):
        raise site.fail("`facets` names a field twice.")
    return tuple(facets)


def _read_reference_models(value: Any, site: KeySite) -> tuple[str, ...]:
    references = value or []
    if not isinstance(references, list) or not all(isinstance(m, str) and m.strip() for m in references):
        raise site.fail("`reference_models` must be a list of model names.")
    return tuple(references)


def _read_judge(value: Any, site: KeySite) -> dict[str, Any] | None:
    """The judge panel's roles, checked here so that a broken role shows when the task is loaded, with or
    without --judge. The role templates are compiled and verdict readers looked up by judges.roles."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise site.fail("`judge` must be a mapping.")
    extra = set(value) - {"roles"}
    if extra:
        raise site.fail(f"unknown judge key(s) {sorted(extra)}; `judge` holds `roles:`.")
    roles = value.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise site.fail("`judge` needs `roles:` mapping role names to {template, verdict}.")
    for name, role in roles.items():
        if not isinstance(role, dict) or "template" not in role or "verdict" not in role:
            raise site.fail(f"judge role {name!r} needs `template` and `verdict`.")
        bad = set(role) - JUDGE_ROLE_KEYS
        if bad:
            raise site.fail(
                f"judge role {name!r} has unknown key(s) {sorted(bad)}; allowed: {sorted(JUDGE_ROLE_KEYS)}."
            )
        if not isinstance(role["verdict"], str):
            raise site.fail(f"judge role {name!r}: `verdict` must be the name of a verdict reader.")
        template = (site.folder / str(role["template"])).resolve()
        if not template.is_file():
            raise site.fail(f"judge role {name!r}: template {template} does not exist.")
        if "swap" in role and not isinstance(role["swap"], bool):
            raise site.fail(f"judge role {name!r}: `swap` must be true or false.")
        if "max_tokens" in role and not (isinstance(role["max_tokens"], int) and role["max_tokens"] > 0):
            raise site.fail(f"judge role {name!r}: `max_tokens` must be a positive integer.")
        if "when" in role and not isinstance(role["when"], str):
            raise site.fail(f"judge role {name!r}: `when` must be a Jinja expression string.")
    return value


def _read_report(value: Any, site: KeySite) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise site.fail(
            "`report` must be a registered report name, 'module:function' or './file.py:function'."
        )
    return value


def _keep(value: Any, site: KeySite) -> Any:
    return value


def _text(value: Any, site: KeySite) -> str:
    return str(value)


def _groups(value: Any, site: KeySite) -> list[str]:
    return [str(g) for g in _as_list(value)]


def _key(
    name: str,
    type_: str,
    default: Any,
    help_: str,
    read: Callable[[Any, KeySite], Any] = _keep,
    attr: str | None = "",
) -> TaskKey:
    return TaskKey(name, type_, default, help_, read, name if attr == "" else attr)


TASK_SCHEMA: tuple[TaskKey, ...] = (
    _key("task", "str", REQUIRED, "name of the task", _read_name, attr="name"),
    _key(
        "include", "str", None, "a YAML file (relative to this one) whose keys this file extends", attr=None
    ),
    _key(
        "group",
        "str or list",
        None,
        "group name or list of group names the task belongs to",
        _groups,
        "groups",
    ),
    _key("version", "any", 0, "version of the task definition; bump it when prompts, data or scoring change"),
    _key("description", "str", "", "one line shown by --tasks list", _text),
    _key(
        "builder",
        "str",
        REQUIRED,
        "dataset builder: a folder name in datasets_builders/ or a path to a .py file",
        _read_builder,
    ),
    _key("builder_config", "str", None, "the builder's config name"),
    _key(
        "builder_kwargs",
        "mapping",
        {},
        "keyword arguments for the builder config",
        _read_mapping("builder_kwargs"),
    ),
    _key("split", "str", "test", "dataset split", _text),
    _key("num_fewshot", "int or list", [0], "default list of shot counts k", _read_shots),
    _key("min_shots", "int", 0, "smallest allowed k", _read_min_shots),
    _key(
        "templates",
        "mapping",
        REQUIRED,
        "prompt templates: system/demo/demo_answer/query, or one whole-prompt template `prompt`",
        _read_templates,
    ),
    _key(
        "target",
        "str",
        REQUIRED,
        "Jinja expression string for the reference answer, e.g. '{{ query.label }}'",
        _read_target,
    ),
    _key(
        "label_space",
        "list or str",
        None,
        "list of labels, or a Jinja expression giving the list per episode (used by `chance`)",
        _read_label_space,
    ),
    _key(
        "parser",
        "name or mapping",
        "identity",
        "the response parser (registered name, module:function or ./file.py:function), or {name: ..., args: {...}}",
        _read_parser,
    ),
    _key(
        "metrics",
        "list",
        REQUIRED,
        "list of evaluate metric modules from metrics/: names or {name: ..., args: {...}}",
        _read_metrics,
    ),
    _key(
        "aggregation",
        "mapping",
        {},
        "per-sample score (or glob such as score@*) -> aggregation: mean, {ratio: [numerator, denominator]} or {stratified_mean: [stratum, weight]}",
        _read_aggregation,
    ),
    _key("higher_is_better", "mapping", {}, "per-metric direction, e.g. {wer: false}", _read_directions),
    _key(
        "generation_kwargs",
        "mapping",
        {},
        "generation settings passed to the model (merged with --gen_kwargs)",
        _read_mapping("generation_kwargs"),
    ),
    _key(
        "parameters",
        "mapping",
        {},
        "task parameters settable with --task_args: {name: {default, type, choices, help, builder_kwarg, min_shots}}",
        _read_parameters,
    ),
    _key(
        "facets",
        "list of str",
        [],
        "episode metadata fields (dotted for nested, e.g. variation.gender) whose values every metric is also "
        "aggregated by, with CIs (results.json `facets`)",
        _read_facets,
    ),
    _key(
        "cluster",
        "str",
        None,
        "episode metadata field (dotted for nested) whose equal values mark episodes that share their data (one "
        "query spoken in several voices, one recording asked about twice): `audioeval compare` resamples such "
        "episodes together (default: every episode on its own)",
        _read_cluster,
    ),
    _key(
        "reference_models",
        "list of str",
        [],
        "offline models (e.g. a benchmark's own baseline) also scored on the run's own episodes, whatever --model is "
        "(results.json `reference_models`)",
        _read_reference_models,
    ),
    _key(
        "judge",
        "mapping",
        None,
        "LLM judge panel: {roles: {name: {template, verdict, swap, when, max_tokens}}}, checked when the task loads",
        _read_judge,
    ),
    _key(
        "report",
        "str",
        None,
        "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
        _read_report,
    ),
    _key("metadata", "mapping", {}, "free-form information kept in results.json", _read_mapping("metadata")),
)
TASK_KEYS = {key.name: key.help for key in TASK_SCHEMA}


def load_task_config(path: Path) -> TaskConfig:
    path = path.resolve()
    data, text, origins = _load_with_includes(path)
    _check_keys(data, TASK_KEYS, path, text, "task")
    values = {}
    for key in TASK_SCHEMA:
        value = data[key.name] if key.name in data else key.default
        site = KeySite(_where(path, text, key.name), origins.get(key.name, path.parent), path, text)
        read = key.read(None if value is REQUIRED else value, site)
        if key.attr:
            values[key.attr] = read
    return TaskConfig(path=path, raw=data, origins=origins, **values)


def schema_markdown() -> str:
    """The key table of docs/architecture.md, as TASK_SCHEMA defines it."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key in TASK_SCHEMA:
        default = (
            "required"
            if key.default is REQUIRED
            else "—"
            if key.default is None
            else f"`{json.dumps(key.default)}`"
        )
        meaning = key.help.replace("|", "\\|")
        rows.append(f"| `{key.name}` | {key.type} | {default} | {meaning} |")
    return "\n".join(rows)


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
        pooled=read_pooled(data.get("pooled"), _where(path, text, "pooled")),
    )


def is_group_file(data: dict[str, Any]) -> bool:
    """Group files list their members under `task`; task files name themselves there."""
    return isinstance(data.get("task"), list)
