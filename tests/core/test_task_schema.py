"""The task and group schemas are declared once (TaskKeys, GroupKeys, TaskParameter): loading, the one-line
errors and the documented key tables all come from the declarations, and judge roles are checked when a task is
loaded, not only when --judge is given."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import (
    TaskKeys,
    group_schema_markdown,
    load_group_config,
    load_task_config,
    parameter_schema_markdown,
    schema_markdown,
)
from audioeval.errors import AudioEvalError, ConfigError

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "fixtures" / "toy"
DOC = ROOT / "docs" / "architecture.md"


def _copy_toy(tmp_path: Path) -> Path:
    dest = tmp_path / "toy"
    shutil.copytree(TOY, dest)
    return dest


def _line(text: str, starts: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith(starts))


@pytest.mark.parametrize(
    ("marker", "table"),
    [("task-schema", schema_markdown), ("group-schema", group_schema_markdown), ("parameter-schema", parameter_schema_markdown)],
)  # fmt: skip
def test_documented_key_tables_are_the_declarations(marker, table):
    text = DOC.read_text()
    start, end = f"<!-- {marker}:start -->\n", f"\n<!-- {marker}:end -->"
    assert start in text and end in text, f"{DOC}: the {marker} markers are missing"
    documented = text.split(start, 1)[1].split(end, 1)[0]
    assert documented == table(), (
        f"{DOC}: the {marker} table drifted from its declaration (config/task.py). Put this between the "
        "markers:\n" + table()
    )


@pytest.mark.parametrize("key", ["path", "raw", "origins", "param_values", "name", "groups"])
def test_what_loading_adds_is_not_a_key_a_file_may_set(tmp_path, key):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_text(path.read_text() + f"{key}: x\n")
    with pytest.raises(ConfigError, match=rf"toy_tones\.yaml:\d+: unknown task key '{key}'"):
        load_task_config(path)


def test_absent_keys_take_the_declared_default(tmp_path):
    folder = _copy_toy(tmp_path)
    config = load_task_config(folder / "toy_tones.yaml")
    absent = {n: f for n, f in TaskKeys.model_fields.items() if (f.alias or n) not in config.raw}
    assert {"facets", "reference_models", "judge", "report", "min_shots", "split"} <= set(absent)
    for name, field in absent.items():
        assert getattr(config, name) == field.get_default(call_default_factory=True), name
    assert config.parser == {"name": "first_line", "args": {}}
    assert load_task_config(folder / "toy_tones_chat.yaml").parameters["dataset"].default is None


def test_a_missing_key_says_what_it_is(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_text(path.read_text().replace('target: "{{ query.label }}"\n', ""))
    with pytest.raises(ConfigError, match=r"toy_tones\.yaml: `target` is required: Jinja expression string"):
        load_task_config(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("min_shots: 0", "min_shots: -1"), r"`min_shots` must be at least 0, got -1\."),
        (("min_shots: 0", "min_shots: two"), r"`min_shots` expects an integer \(at least 0\), got 'two'\."),
        (("num_fewshot: [0, 1, 3]", "num_fewshot: [0, x]"), r"`num_fewshot\[1\]` expects an integer \(at least 0\), got 'x'\."),
        (("builder_config: tones", "builder_config: [tones]"), r"`builder_config` expects a string or none, got \['tones'\]\."),
        (("builder_config: tones", "builder_kwargs: 3"), r"`builder_kwargs` expects a mapping, got 3\."),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_kind_names_the_key_its_line_and_what_it_takes(tmp_path, edit, message):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    text = path.read_text()
    if edit[0] == "min_shots: 0":
        text += "min_shots: 0\n"
    text = text.replace(*edit)
    path.write_text(text)
    key = edit[1].split(":")[0]
    with pytest.raises(ConfigError, match=rf"toy_tones\.yaml:{_line(text, key + ':')}: " + message):
        load_task_config(path)


def test_facets_key_is_read_as_a_tuple_and_checked(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    assert load_task_config(path).facets == ()
    text = path.read_text()
    path.write_text(text + "facets: [domain, stage]\n")
    assert load_task_config(path).facets == ("domain", "stage")
    path.write_text(text + "facets: [domain, 3]\n")
    with pytest.raises(
        ConfigError, match=r"toy_tones\.yaml:\d+: `facets` must be a list of episode metadata"
    ):
        load_task_config(path)


@pytest.mark.parametrize(
    "role, message",
    [
        ("{template: judge/agrees.jinja}", r"`judge.roles.agrees.verdict` is required: the verdict reader"),
        (
            "{template: judge/missing.jinja, verdict: yes_no}",
            r"`judge.roles.agrees.template`: template .*missing\.jinja does not exist",
        ),
        (
            "{template: judge/agrees.jinja, verdict: yes_no, swapp: true}",
            r"`judge.roles.agrees`: unknown key 'swapp'. Did you mean: swap\?",
        ),
        (
            "{template: judge/agrees.jinja, verdict: yes_no, max_tokens: -1}",
            r"`judge.roles.agrees.max_tokens` must be at least 1, got -1",
        ),
        ("{template: judge/agrees.jinja, verdict: yes_no, swap: 1}", r"`judge.roles.agrees.swap` expects true or false, got 1"),
    ],
)  # fmt: skip
def test_judge_role_shape_is_checked_when_the_file_loads_at_the_role_s_line(tmp_path, role, message):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones_judged.yaml"
    text = path.read_text().replace("{template: judge/agrees.jinja, verdict: yes_no}", role)
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"toy_tones_judged\.yaml:{_line(text, 'agrees:')}: " + message):
        load_task_config(path)


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            ("verdict: yes_no}", "verdict: yes_or_no}"),
            r"judge role 'agrees': unknown verdict reader 'yes_or_no'. Did you mean: yes_no\?",
        ),
        (('when: "k > 0"', 'when: "k >"'), r"judge role 'quality': `when` is not a Jinja expression"),
    ],
)
def test_a_judge_role_that_cannot_run_breaks_its_task_at_discovery_without_judge(
    tmp_path, caplog, edit, message
):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones_judged.yaml"
    path.write_text(path.read_text().replace(*edit))
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        registry = TaskRegistry.discover([folder])
    assert "toy_tones_judged" not in registry.tasks and "toy_tones" in registry.tasks
    with pytest.raises(AudioEvalError, match=message):
        registry.select("toy_tones_judged")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{default: plain, kind: x,", r"`parameters.style`: unknown key 'kind'. Known: builder_kwarg, choices"),
        ("{type: str,", r"`parameters.style.default` is required: its value when --task_args does not set it"),
        ("{default: plain, type: text,", r"`parameters.style.type` must be one of: str, int, float, bool; got 'text'"),
    ],
)  # fmt: skip
def test_a_bad_task_parameter_is_reported_at_its_own_line(tmp_path, spec, message):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    text = path.read_text().replace("style: {default: plain,", f"style: {spec}")
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"toy_tones\.yaml:{_line(text, 'style:')}: {message}"):
        load_task_config(path)


def test_a_reserved_parameter_name_is_refused_at_its_line(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    text = path.read_text().replace("  style:", "  dataset: {default: x}\n  style:")
    path.write_text(text)
    with pytest.raises(
        ConfigError, match=rf"toy_tones\.yaml:{_line(text, 'dataset:')}: .*'dataset' is reserved"
    ):
        load_task_config(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("group: g\ntask: [a]\ntasks: [b]\n", r"g\.yaml:3: unknown group key 'tasks'. Did you mean: task\?"),
        ("group: g\ntask: [a, 2]\n", r"g\.yaml:2: `task\[1\]` expects a string, got 2\."),
        ("task: [a]\n", r"g\.yaml: `group` is required: name of the group\."),
        ("group: g\ntask: [a]\naggregate_metrics: score\n", r"g\.yaml:3: `aggregate_metrics` expects a list of strings or none"),
    ],
)  # fmt: skip
def test_group_keys_are_checked_against_their_declaration(tmp_path, text, message):
    path = tmp_path / "g.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_group_config(path)


def test_a_group_file_loads_its_declared_defaults(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("group: g\ntask: [a, b]\ndescription: 2\n")
    group = load_group_config(path)
    assert (group.name, group.members, group.description, group.facet_aggregation) == (
        "g",
        ["a", "b"],
        "2",
        "mean_of_tasks",
    )
    assert group.path == path.resolve() and group.pooled is None and group.metadata == {}
