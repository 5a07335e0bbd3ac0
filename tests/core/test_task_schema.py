"""The task schema is one table: TaskConfig's fields, the loader's checks and the documented key table all come
from TASK_SCHEMA, and judge roles are checked when a task is loaded, not only when --judge is given."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import REQUIRED, TASK_SCHEMA, TaskConfig, load_task_config, schema_markdown
from audioeval.errors import AudioEvalError, ConfigError

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "tests" / "fixtures" / "toy"
DOC = ROOT / "docs" / "architecture.md"


def _copy_toy(tmp_path: Path) -> Path:
    dest = tmp_path / "toy"
    shutil.copytree(TOY, dest)
    return dest


def test_documented_key_table_is_the_schema():
    text = DOC.read_text()
    start, end = "<!-- task-schema:start -->\n", "\n<!-- task-schema:end -->"
    assert start in text and end in text, f"{DOC}: the task-schema markers are missing"
    documented = text.split(start, 1)[1].split(end, 1)[0]
    assert documented == schema_markdown(), (
        f"{DOC}: the task key table drifted from TASK_SCHEMA (config.py). Put this between the markers:\n"
        + schema_markdown()
    )


def test_every_schema_key_fills_a_task_config_field():
    fields = {f.name for f in dataclasses.fields(TaskConfig)}
    attrs = [key.attr for key in TASK_SCHEMA if key.attr]
    assert len(attrs) == len(set(attrs)) and set(attrs) <= fields
    # the fields not filled from a key are the loader's own bookkeeping
    assert fields - set(attrs) == {"path", "raw", "origins", "param_values", "min_shots_reason"}


def test_absent_keys_take_the_schema_default(tmp_path):
    folder = _copy_toy(tmp_path)
    config = load_task_config(folder / "toy_tones.yaml")
    data = config.raw
    for key in TASK_SCHEMA:
        if key.name in data or key.default is REQUIRED or not key.attr:
            continue
        value = getattr(config, key.attr)
        if key.name == "parameters":
            assert set(value) == {"dataset"}  # only the core parameter every task has
        else:
            assert value == key.read(key.default, None), key.name


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
        ("{template: judge/agrees.jinja}", r"judge role 'agrees' needs `template` and `verdict`"),
        (
            "{template: judge/missing.jinja, verdict: yes_no}",
            r"judge role .agrees.: template .*missing\.jinja does not exist",
        ),
        (
            "{template: judge/agrees.jinja, verdict: yes_no, swapp: true}",
            r"judge role 'agrees' has unknown key\(s\) \['swapp'\]",
        ),
        (
            "{template: judge/agrees.jinja, verdict: yes_no, max_tokens: -1}",
            r"judge role 'agrees': `max_tokens` must be a positive",
        ),
    ],
)
def test_judge_role_shape_is_checked_when_the_file_loads(tmp_path, role, message):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones_judged.yaml"
    path.write_text(path.read_text().replace("{template: judge/agrees.jinja, verdict: yes_no}", role))
    with pytest.raises(ConfigError, match=r"toy_tones_judged\.yaml:\d+: " + message):
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


def test_a_bad_task_parameter_is_reported_at_its_own_line(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    text = path.read_text().replace("style: {default: plain,", "style: {default: plain, kind: x,")
    path.write_text(text)
    line = text.splitlines().index(next(t for t in text.splitlines() if t.strip().startswith("style:"))) + 1
    with pytest.raises(
        ConfigError, match=rf"toy_tones\.yaml:{line}: parameter 'style' has unknown key\(s\) \['kind'\]"
    ):
        load_task_config(path)
