"""Task and group configurations: YAML files read with yaml.safe_load and checked against their declared keys.

`TaskKeys` and `GroupKeys` declare every key once (type, default, bounds, help, and the check of what a type
cannot say); loading, the one-line errors (file:line, close matches), `--task_args list` and the key tables of
docs/architecture.md all come from them (tests/core/test_task_schema.py fails when the docs drift).
`TaskConfig` and `GroupConfig` are those keys as loaded, plus where they were read from.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from audioeval.config.fields import (
    Arg,
    Count,
    Declared,
    FieldProblem,
    Mapping,
    Problem,
    Text,
    markdown_table,
    model_rows,
    read_model,
    takes,
)
from audioeval.config.pooled import PooledRule, read_pooled
from audioeval.errors import ConfigError


def _line_of(text: str, keys: tuple[str | int, ...]) -> int | None:
    """The line of `keys[0]`, then of each key inside it that has a line of its own (block style)."""
    line, position = None, 0
    for key in (k for k in keys if isinstance(k, str)):
        match = re.compile(rf"^\s*{re.escape(key)}\s*:", flags=re.MULTILINE).search(text, position)
        if match is None:
            break
        line, position = text[: match.start()].count("\n") + 1, match.end()
    return line


def _where(path: Path, text: str, *keys: str | int) -> str:
    line = _line_of(text, keys)
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


# libyaml's safe loader where PyYAML was built with it (the same documents, ten times faster), else PyYAML's
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> tuple[dict[str, Any], str]:
    text = read_text_file(path, "YAML file")
    try:
        data = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {getattr(err, 'problem', err)}. Fix the syntax.") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys to values at the top level.")
    return data, text


# ---- task parameters (--task_args) ----------------------------------------------------------------------------


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    return value


#: what a parameter's `type:` names -> the declared type its values are read as (a number given for a `str`
#: parameter reads as its text, a whole number given for an `int` one as that integer: `n_episodes=1e3`)
PARAMETER_TYPES: dict[str, Any] = {
    "str": Text,
    "int": Annotated[int, BeforeValidator(_not_a_bool)],
    "float": Annotated[float, BeforeValidator(_not_a_bool)],
    "bool": bool,
}


class TaskParameter(Declared):
    """A task parameter, settable with --task_args."""

    default: Any = Arg("its value when --task_args does not set it")
    type: Literal["str", "int", "float", "bool"] = Arg("the type of its values", default="str")
    choices: list[Any] | None = Arg("the values it may take", default=None)
    help: Text = Arg("what it sets, shown by `--task_args list`", default="")
    builder_kwarg: str | None = Arg("the builder argument its value is passed as", default=None)
    min_shots: dict[Any, Count] = Arg(
        "value -> the smallest k the task allows with it, e.g. {null: 1}", default_factory=dict
    )

    @model_validator(mode="after")
    def _floors_name_choices(self) -> TaskParameter:
        unknown = [v for v in self.min_shots if self.choices is not None and v not in self.choices]
        if unknown:
            raise Problem(f"`min_shots` names {unknown!r}, which is not among its choices.")
        return self

    def coerce(self, name: str, value: Any, source: str) -> Any:
        """The value read as the parameter's type and checked against its choices; `source` names where it was
        given (--task_args, the task file)."""
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            value = None
        elif self.type != "str" or not isinstance(value, str):
            declared = PARAMETER_TYPES[self.type]
            try:
                value = TypeAdapter(declared).validate_python(value)
            except ValidationError as err:
                raise ConfigError(
                    f"{source}: parameter {name!r} expects {takes(declared)}, got {value!r}."
                ) from err
        if self.choices is not None and value not in self.choices:
            shown = ", ".join("null" if c is None else str(c) for c in self.choices)
            raise ConfigError(f"{source}: parameter {name!r} must be one of: {shown}; got {value!r}.")
        return value


# Parameters every task has, whatever its YAML declares.
CORE_PARAMETERS = {
    "dataset": TaskParameter(
        default=None,
        help="read the episodes from a folder written by `audioeval build` or a Hugging Face dataset "
        "(org/name, org/name@revision) instead of generating them; the run records the revision it read",
    ),
}


# ---- the checks of what a type cannot say ---------------------------------------------------------------------


def _folder(info: ValidationInfo, key: str) -> Path:
    """The folder relative paths in `key` resolve against: that of the file declaring the key."""
    context: tuple[dict[str, Path], Path] = info.context or ({}, Path.cwd())
    origins, default = context
    return origins.get(key, default)


def _as_list(value: Any) -> Any:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _named_spec(value: Any, what: str) -> dict[str, Any]:
    if isinstance(value, str):
        return {"name": value, "args": {}}
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        extra = set(value) - {"name", "args"}
        if extra:
            raise Problem(f"unknown key(s) {sorted(extra)} in {what}; use name and args.")
        args = value.get("args") or {}
        if not isinstance(args, dict):
            raise Problem(f"{what} args must be a mapping.")
        return {"name": value["name"], "args": args}
    raise Problem(f"{what} must be a name or a mapping with `name` and optional `args`.")


def _read_name(value: Any) -> Any:
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", value):
        raise Problem("`task` must be a name made of letters, digits, '_', '-' or '.'.")
    return value


def _read_parser(value: Any) -> Any:
    return _named_spec(value, "parser")


def _read_metrics(value: Any) -> Any:
    metrics = [_named_spec(m, "metric") for m in _as_list(value)]
    if not metrics:
        raise Problem("at least one metric is required.")
    return metrics


def _read_aggregation(value: Any) -> Any:
    if not isinstance(value, dict):
        raise Problem("`aggregation` must map score names to an aggregation.")
    for key, agg in value.items():
        ok = agg == "mean" or (
            isinstance(agg, dict)
            and len(agg) == 1
            and set(agg) <= {"ratio", "stratified_mean"}
            and isinstance(next(iter(agg.values())), list)
            and len(next(iter(agg.values()))) == 2
        )
        if not ok:
            raise Problem(
                f"aggregation of {key!r} must be `mean`, `{{ratio: [numerator, denominator]}}` "
                "or `{stratified_mean: [stratum, weight]}`."
            )
    return value


def _read_directions(value: Any) -> Any:
    return {str(k): bool(v) for k, v in value.items()} if isinstance(value, dict) else value


def _read_cluster(value: Any) -> Any:
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise Problem("`cluster` must be an episode metadata field name, e.g. item_id.")
    return value


def _read_facets(value: Any) -> Any:
    facets = value or []
    if not isinstance(facets, list) or not all(isinstance(f, str) and f.strip() for f in facets):
        raise Problem("`facets` must be a list of episode metadata field names, e.g. [domain].")
    if len(set(facets)) != len(facets):
        raise Problem("`facets` names a field twice.")
    return tuple(facets)


def _read_reference_models(value: Any) -> Any:
    references = value or []
    if not isinstance(references, list) or not all(isinstance(m, str) and m.strip() for m in references):
        raise Problem("`reference_models` must be a list of model names.")
    return tuple(references)


def _read_report(value: Any) -> Any:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise Problem("`report` must be a registered report name, 'module:function' or './file.py:function'.")
    return value


TEMPLATE_ROLES = ("system", "demo", "demo_answer", "query", "prompt")


class JudgeRoleSpec(Declared):
    """One judge role of a task's `judge: {roles: {name: ...}}`."""

    template: str = Arg("the judge's whole-prompt template, relative to the file declaring `judge`")
    verdict: str = Arg("the verdict reader: a registered name, module:function or ./file.py:function")
    swap: bool = Arg("judge twice, the second time in swapped order, and average", default=False)
    when: str | None = Arg("a Jinja expression: judge only the samples where it is true", default=None)
    max_tokens: int = Arg("the judge reply's token limit", default=1024, ge=1)

    @field_validator("template")
    @classmethod
    def _template_exists(cls, value: str, info: ValidationInfo) -> str:
        template = (_folder(info, "judge") / value).resolve()
        if not template.is_file():
            raise Problem(f"template {template} does not exist.")
        return value


class JudgeSpec(Declared):
    """A task's LLM judge panel."""

    roles: dict[str, JudgeRoleSpec] = Arg(
        "role name -> {template, verdict, swap, when, max_tokens}", min_length=1
    )


# ---- the task keys ----------------------------------------------------------------------------------------------


class TaskKeys(Declared):
    """The keys of a task YAML file (unknown keys are errors), in the order of the documented table."""

    name: Annotated[str, PlainValidator(_read_name)] = Arg("name of the task", alias="task")
    include: str | None = Arg("a YAML file (relative to this one) whose keys this file extends", default=None)
    groups: Annotated[list[Text], BeforeValidator(_as_list)] = Arg(
        "group name or list of group names the task belongs to",
        alias="group",
        default_factory=list,
        shown_type="str or list",
        shown_default="—",
    )
    version: Any = Arg(
        "version of the task definition; bump it when prompts, data or scoring change", default=0
    )
    description: Text = Arg("one line shown by --tasks list", default="")
    builder: str = Arg("dataset builder: a folder name in datasets_builders/ or a path to a .py file")
    builder_config: str | None = Arg("the builder's config name", default=None)
    builder_kwargs: Mapping = Arg("keyword arguments for the builder config", default_factory=dict)
    split: Text = Arg("dataset split", default="test")
    num_fewshot: Annotated[list[Count], BeforeValidator(_as_list), Field(min_length=1)] = Arg(
        "default list of shot counts k", default_factory=lambda: [0], shown_type="int or list"
    )
    min_shots: Count = Arg("smallest allowed k", default=0)
    templates: dict[str, Path] = Arg(
        "prompt templates: system/demo/demo_answer/query, or one whole-prompt template `prompt`"
    )
    target: str = Arg("Jinja expression string for the reference answer, e.g. '{{ query.label }}'")
    label_space: list[Text] | str | None = Arg(
        "list of labels, or a Jinja expression giving the list per episode (used by `chance`)",
        default=None,
        shown_type="list or str",
    )
    parser: Annotated[dict[str, Any], PlainValidator(_read_parser)] = Arg(
        "the response parser (registered name, module:function or ./file.py:function), or "
        "{name: ..., args: {...}}",
        default_factory=lambda: {"name": "identity", "args": {}},
        shown_type="name or mapping",
        shown_default="`identity`",
    )
    metrics: Annotated[list[dict[str, Any]], PlainValidator(_read_metrics)] = Arg(
        "list of evaluate metric modules from metrics/: names or {name: ..., args: {...}}"
    )
    aggregation: Annotated[Mapping, AfterValidator(_read_aggregation)] = Arg(
        "per-sample score (or glob such as score@*) -> aggregation: mean, {ratio: [numerator, denominator]} or "
        "{stratified_mean: [stratum, weight]}",
        default_factory=dict,
    )
    higher_is_better: Annotated[Mapping, AfterValidator(_read_directions)] = Arg(
        "per-metric direction, e.g. {wer: false}", default_factory=dict
    )
    generation_kwargs: Mapping = Arg(
        "generation settings passed to the model (merged with --gen_kwargs)", default_factory=dict
    )
    parameters: Annotated[dict[str, TaskParameter], BeforeValidator(lambda v: {} if v is None else v)] = Arg(
        "task parameters settable with --task_args: {name: {default, type, choices, help, builder_kwarg, "
        "min_shots}} (the table below)",
        default_factory=dict,
    )
    facets: Annotated[tuple[str, ...], PlainValidator(_read_facets)] = Arg(
        "episode metadata fields (dotted for nested, e.g. variation.gender) whose values every metric is also "
        "aggregated by, with CIs (results.json `facets`)",
        default=(),
        shown_default="`[]`",
    )
    cluster: Annotated[str | None, PlainValidator(_read_cluster)] = Arg(
        "episode metadata field (dotted for nested) whose equal values mark episodes that share their data (one "
        "query spoken in several voices, one recording asked about twice): `audioeval compare` resamples such "
        "episodes together (default: every episode on its own)",
        default=None,
    )
    reference_models: Annotated[tuple[str, ...], PlainValidator(_read_reference_models)] = Arg(
        "offline models (e.g. a benchmark's own baseline) also scored on the run's own episodes, whatever "
        "--model is (results.json `reference_models`)",
        default=(),
        shown_default="`[]`",
    )
    judge: JudgeSpec | None = Arg(
        "LLM judge panel: {roles: {name: {template, verdict, swap, when, max_tokens}}}, checked when the task "
        "loads",
        default=None,
    )
    report: Annotated[str | None, PlainValidator(_read_report)] = Arg(
        "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
        default=None,
    )
    metadata: Mapping = Arg("free-form information kept in results.json", default_factory=dict)

    @field_validator("templates", mode="before")
    @classmethod
    def _templates(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, dict) or not value:
            raise Problem("`templates` must map template roles to files.")
        unknown = set(value) - set(TEMPLATE_ROLES)
        if unknown:
            raise Problem(f"unknown template role(s) {sorted(unknown)}; use {sorted(TEMPLATE_ROLES)}.")
        if "prompt" in value and len([k for k, v in value.items() if v]) > 1:
            raise Problem("give either one `prompt` template or system/demo/query templates.")
        if "prompt" not in value and "query" not in value:
            raise Problem("a `query` template (or a whole `prompt` template) is required.")
        templates: dict[str, Path] = {}
        for role, rel in value.items():
            if rel is None:
                continue
            path = (_folder(info, "templates") / str(rel)).resolve()
            if not path.is_file():
                raise Problem(f"template {role!r} file {path} does not exist.")
            templates[role] = path
        return templates

    @field_validator("parameters", mode="after")
    @classmethod
    def _with_core_parameters(cls, value: dict[str, TaskParameter]) -> dict[str, TaskParameter]:
        for name, core in CORE_PARAMETERS.items():
            if name in value:
                raise Problem(
                    f"parameter name {name!r} is reserved: every task has it ({core.help}).", (name,)
                )
        return {**value, **CORE_PARAMETERS}


class TaskConfig(TaskKeys):
    """A task as loaded: its keys, where they come from and, once resolved for a run, its parameter values."""

    path: Path
    raw: dict[str, Any]  # the keys as written (includes merged): what the configuration hash is made of
    origins: dict[str, Path] = Field(default_factory=dict)  # key -> folder of the file that declares it
    param_values: dict[str, Any] = Field(default_factory=dict)
    min_shots_reason: str = ""  # the parameter value that raised min_shots, e.g. "prompt_style=null"

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
            values[name] = spec.coerce(name, raw, source if name in overrides else str(self.path))
        kwargs = dict(self.builder_kwargs)
        for name, spec in self.parameters.items():
            if spec.builder_kwarg:
                kwargs[spec.builder_kwarg] = values[name]
        clone = self.model_copy(update={"param_values": values, "builder_kwargs": kwargs})
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


# ---- the group keys ---------------------------------------------------------------------------------------------


class GroupKeys(Declared):
    """The keys of a group YAML file (a file whose `task:` is a list)."""

    name: str = Arg("name of the group", alias="group")
    members: Annotated[list[str], BeforeValidator(_as_list)] = Arg(
        "list of member tasks or groups", alias="task", default_factory=list
    )
    description: Text = Arg("one line shown by --tasks list", default="")
    aggregate_metrics: list[str] | None = Arg(
        "metrics averaged over the member tasks (names or globs such as score@*; default: those every member "
        "reports)",
        default=None,
    )
    facet_aggregation: Literal["mean_of_tasks", "pooled_mean"] = Arg(
        "how the group aggregates its tasks' facets: mean_of_tasks (the unweighted mean of the tasks' values, "
        "like the group's own numbers) or pooled_mean (the plain mean over all the tasks' samples with that "
        "value)",
        default="mean_of_tasks",
    )
    pooled: Annotated[PooledRule | None, PlainValidator(read_pooled)] = Arg(
        "metrics pooled over the items of all the group's tasks per shot setting, with CIs: {metrics: [names or "
        "globs], settings: {name: [k, ...] or {min: k}}} (results.json `pooled`)",
        default=None,
    )
    report: str | None = Arg(
        "registered name, module:function or ./file.py:function writing benchmark-specific tables and plots",
        default=None,
    )
    version: Any = Arg("version of the group definition", default=None)
    metadata: Mapping = Arg("free-form information kept in results.json", default_factory=dict)


class GroupConfig(GroupKeys):
    """A group: its keys and the file they were read from (None: a group only named by its tasks' `group:`)."""

    path: Path | None = None


# ---- loading ----------------------------------------------------------------------------------------------------


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


def _config_error(problem: FieldProblem, path: Path, text: str, what: str) -> ConfigError:
    """The problem as one line naming the file and the line of the key at fault."""
    top_level_unknown = problem.kind == "unknown" and len(problem.path) == 1
    message = problem.unknown(f"{what} key") if top_level_unknown else problem.message()
    return ConfigError(f"{_where(path, text, *problem.path)}: {message}")


def load_task_config(path: Path) -> TaskConfig:
    path = path.resolve()
    data, text, origins = _load_with_includes(path)
    try:
        keys = read_model(TaskKeys, data, context=(origins, path.parent))
    except FieldProblem as problem:
        raise _config_error(problem, path, text, "task") from None
    return TaskConfig.model_construct(**dict(keys), path=path, raw=data, origins=origins)


def load_group_config(path: Path) -> GroupConfig:
    path = path.resolve()
    data, text = read_yaml(path)
    try:
        keys = read_model(GroupKeys, data)
    except FieldProblem as problem:
        raise _config_error(problem, path, text, "group") from None
    return GroupConfig.model_construct(**dict(keys), path=path)


def is_group_file(data: dict[str, Any]) -> bool:
    """Group files list their members under `task`; task files name themselves there."""
    return isinstance(data.get("task"), list)


def parameter_rows(config: TaskConfig) -> list[tuple[str, str, str, str]]:
    """(name, type, default, help) of each parameter a task takes, for `--task_args list`."""
    rows = []
    for name, spec in config.parameters.items():
        kind = spec.type + (f", one of: {', '.join(_shown(c) for c in spec.choices)}" if spec.choices else "")
        rows.append((name, kind, _shown(spec.default), spec.help))
    return rows


def _shown(value: Any) -> str:
    return "—" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


# ---- the documented tables --------------------------------------------------------------------------------------

_HEADERS = ("key", "type", "default", "meaning")


def schema_markdown() -> str:
    """The task key table of docs/architecture.md, as TaskKeys declares it."""
    return markdown_table(_HEADERS, model_rows(TaskKeys))


def group_schema_markdown() -> str:
    """The group key table of docs/architecture.md, as GroupKeys declares it."""
    return markdown_table(_HEADERS, model_rows(GroupKeys))


def parameter_schema_markdown() -> str:
    """The table of a task parameter's keys, as TaskParameter declares them."""
    return markdown_table(_HEADERS, model_rows(TaskParameter))
