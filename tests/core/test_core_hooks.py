"""`parser:`, a judge role's `verdict:` and `report:` each take a registered name, `module:function` or
`./file.py:function` beside the YAML; a wrong one is a ConfigError naming the file, the key and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from audioeval.config.judge_roles import load_roles
from audioeval.config.parsers import PARSERS, get_parser
from audioeval.config.task import load_task_config
from audioeval.errors import ConfigError
from audioeval.results.scoring import TaskScorer
from tests.conftest import run_cli


def task_file(folder: Path, toy_dir: Path, extra: str, name: str = "hooked") -> Path:
    """A task in its own folder that includes the toy benchmark's task and overrides some keys."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(f"include: {toy_dir / 'toy_bench.yaml'}\ntask: {name}\ngroup: []\n{extra}")
    return path


def test_the_three_forms_resolve(toy_dir):
    assert get_parser("first_line")("high\nmore") == "high"  # registered
    assert get_parser("audioeval.config.parsers.common:first_line")("high\nmore") == "high"  # module:function
    parse = get_parser("./toy_hooks.py:parse_tone", base_dir=toy_dir)  # a file beside the YAML
    assert parse("it was LOW") == "low" and parse("dunno") is None


def test_relative_hooks_resolve_against_the_file_that_declares_them(toy_dir, tmp_path):
    """The including file lives elsewhere; the parser and verdict still come from the toy folder."""
    config = load_task_config(task_file(tmp_path / "elsewhere", toy_dir, ""))
    assert TaskScorer(config).parse("a HIGH one") == "high"
    (role,) = load_roles(config)
    assert role.read_verdict("Grade: FAIL") == 0.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("first_lin", "unknown parser 'first_lin'"),
        ("./nowhere.py:parse", "nowhere.py does not exist"),
        ("{toy}/toy_hooks.py:parse_pitch", "has no function 'parse_pitch'"),
        ("no_such_package.parsers:parse", "cannot be imported"),
    ],
)
def test_a_wrong_parser_names_the_task_file(toy_dir, tmp_path, spec, message):
    path = task_file(tmp_path, toy_dir, f"parser: {spec.format(toy=toy_dir)}\n")
    with pytest.raises(ConfigError) as err:
        TaskScorer(load_task_config(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_unknown_parser_suggests_close_names():
    with pytest.raises(ConfigError, match="first_line"):
        get_parser("first_lines", source="x.yaml")
    assert "first_line" in PARSERS.names() and "audioicl_morse" in PARSERS.names()  # a wing's, discovered


def test_a_wrong_verdict_names_the_file_and_the_role(toy_dir, tmp_path):
    extra = "judge:\n  roles:\n    graded: {template: judge/graded.jinja, verdict: ./hooks.py:read_mark}\n"
    path = task_file(tmp_path, toy_dir, extra)
    (tmp_path / "hooks.py").write_text("def read_grade(reply):\n    return 1.0\n")
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "graded.jinja").write_text((toy_dir / "judge" / "graded.jinja").read_text())
    with pytest.raises(ConfigError) as err:
        load_roles(load_task_config(path))
    text = str(err.value)
    assert str(path) in text and "judge role 'graded'" in text and "has no function 'read_mark'" in text


def test_a_wrong_report_stops_the_run_before_any_request(toy_dir, tmp_path):
    task_file(tmp_path / "tasks", toy_dir, f"report: {toy_dir}/toy_hooks.py:write_summary\njudge: null\n")
    code, _, err = run_cli(
        ["--tasks", "hooked", "--include_path", str(tmp_path / "tasks"), "--model", "chance", "--no_cache"]
        + ["--output_path", str(tmp_path / "out")]
    )
    assert code != 0
    assert "hooked.yaml: `report`" in err and "has no function 'write_summary'" in err
    assert not (tmp_path / "out").exists()
