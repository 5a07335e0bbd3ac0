"""Bad task configs and command lines fail before any model loads, naming the file/field and what to do."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import load_task_config
from audioeval.errors import ConfigError, UsageError
from audioeval.kvargs import parse_kv
from audioeval.run.prepared import preflight, prepare_tasks
from tests.conftest import run_cli


def _copy_toy(tmp_path: Path) -> Path:
    dest = tmp_path / "toy"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "toy", dest)
    return dest


def _prepare(folder: Path, task: str, **kwargs):
    registry = TaskRegistry.discover([folder])
    defaults = dict(num_fewshot=None, task_args={}, limit=None, seed=0, gen_kwargs={})
    defaults.update(kwargs)
    return prepare_tasks(registry, [task], **defaults)


def test_unknown_yaml_key_names_file_line_and_suggestion(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_text(path.read_text().replace("num_fewshot:", "num_fewshots:"))
    with pytest.raises(ConfigError) as err:
        load_task_config(path)
    message = str(err.value)
    assert (
        f"{path}:" in message
        and "num_fewshots" in message
        and "num_fewshot" in message.split("Did you mean")[1]
    )


def test_missing_template_file(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").unlink()
    with pytest.raises(ConfigError, match=r"template 'query' file .*query.jinja does not exist"):
        load_task_config(folder / "toy_tones.yaml")


def test_template_syntax_error_reports_file_and_line(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "demo.jinja").write_text("[Demo]\n{{ audio(demo.clips[0]) }\n")
    with pytest.raises(ConfigError, match=r"demo.jinja:2: template syntax error"):
        _prepare(folder, "toy_tones")


def test_undefined_variable_in_template_reports_location(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").write_text("[Query]\n{{ audio(query.clips[0]) }} {{ query.no_such_field }}\n")
    tasks = _prepare(folder, "toy_tones")
    with pytest.raises(ConfigError, match=r"query.jinja:2: error rendering templates.query .*no_such_field"):
        preflight(tasks, _chance())


def test_missing_audio_placement_is_a_clip_mismatch(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").write_text("[Query] Label:\n")
    tasks = _prepare(folder, "toy_tones")
    with pytest.raises(ConfigError, match=r"query clip 'query' is never placed"):
        preflight(tasks, _chance())


def test_raw_audio_placeholder_in_text_is_rejected(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").write_text("[Query] <audio> {{ audio(query.clips[0]) }} Label:\n")
    tasks = _prepare(folder, "toy_tones")
    with pytest.raises(ConfigError, match=r"writes the audio placeholder '<audio>'"):
        preflight(tasks, _chance())


def test_clip_placed_twice_is_rejected(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").write_text("{{ audio(query.clips[0]) }}{{ audio(query.clips[0]) }}\n")
    tasks = _prepare(folder, "toy_tones")
    with pytest.raises(ConfigError, match=r"placed 2 times"):
        preflight(tasks, _chance())


def test_unknown_task_lists_close_matches():
    registry = TaskRegistry.discover([Path(__file__).resolve().parents[1] / "fixtures" / "toy"])
    with pytest.raises(UsageError, match=r"unknown task or group 'toy_tone'.*Did you mean: toy_tones"):
        registry.select("toy_tone")


def test_unknown_task_arg_lists_declared_parameters(toy_dir):
    with pytest.raises(UsageError, match=r"unknown task parameter 'styl'.*style"):
        _prepare(toy_dir, "toy_tones", task_args={"styl": "terse"})


def test_task_arg_outside_choices(toy_dir):
    with pytest.raises(ConfigError, match=r"parameter 'style' must be one of: plain, terse; got 'loud'"):
        _prepare(toy_dir, "toy_tones", task_args={"style": "loud"})


def test_task_args_reach_builder_and_templates(toy_dir):
    (task,) = _prepare(toy_dir, "toy_tones", task_args={"n_episodes": 5, "style": "terse"})
    assert task.builder.num_episodes() == 5
    request, _ = task.requests_for(task.episode(0))[0]
    assert request.messages[0].text == "low/high"


def test_shots_beyond_episode_size_explain_the_limit(toy_dir):
    tasks = _prepare(toy_dir, "toy_tones", num_fewshot=[5])
    with pytest.raises(UsageError, match=r"k=5 needs 5 demonstrations but its episodes carry 3"):
        preflight(tasks, _chance())


@pytest.mark.parametrize("text", ["pretrained", "a=1,,b", "=3", "a b=1"])
def test_malformed_kv_shows_expected_form(text):
    with pytest.raises(UsageError, match=r"Expected the form key=value,key2=value2"):
        parse_kv(text, "--model_args")


def test_kv_values_are_typed():
    assert parse_kv("a=1,b=0.5,c=true,d=none,e=x,f='1,2'", "--x") == {
        "a": 1,
        "b": 0.5,
        "c": True,
        "d": None,
        "e": "x",
        "f": "1,2",
    }


def test_cli_unknown_model_lists_close_matches(toy_dir):
    code, _, err = run_cli(["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "chanse"])
    assert code == 2 and "unknown model 'chanse'" in err and "chance" in err and "Traceback" not in err


def test_cli_unknown_model_arg(toy_dir):
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(toy_dir),
            "--model",
            "chance",
            "--model_args",
            "pretrained=x",
        ]
    )
    assert code == 2 and "unknown argument for model 'chance' 'pretrained'" in err


def test_cli_unknown_metric(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_text(path.read_text().replace("metrics: [./toy_exact]", "metrics: [accuracyy]"))
    code, _, err = run_cli(["--tasks", "toy_tones", "--include_path", str(folder), "--model", "chance"])
    assert code == 2 and "unknown metric 'accuracyy'" in err


def test_cli_unwritable_output_path_fails_before_work(toy_dir, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(toy_dir),
            "--model",
            "chance",
            "--output_path",
            str(blocker / "sub"),
            "--no_cache",
        ]
    )
    assert code == 2 and "--output_path" in err and "cannot write there" in err


def test_tasks_list_prints_groups_with_subtasks(toy_dir):
    code, out, _ = run_cli(["--tasks", "list", "--include_path", str(toy_dir)])
    assert code == 0
    lines = out.splitlines()
    group_line = lines.index("toy (group)")
    assert lines[group_line + 1].strip().startswith("toy_tones")


def test_without_model_the_chance_baseline_runs_with_a_notice(toy_dir):
    code, out, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "2"]
    )
    assert code == 0 and "| toy_tones | accuracy |" in out
    (notice,) = [line for line in err.splitlines() if "--model" in line]
    assert (
        "running the offline `chance` baseline" in notice and "--model hf --model_args pretrained=" in notice
    )


def _chance():
    from audioeval.models.registry import get_model_class

    return get_model_class("chance")


def test_audio_followed_by_text_starting_like_a_marker(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "chat.jinja").write_text(
        '{{ turn("user") }}{{ audio(query.clips[0]) }}Tab 1{% for d in demos %}{{ audio(d.clips[0]) }}Tell{% endfor %}\n'
    )
    (task,) = _prepare(folder, "toy_tones_chat", num_fewshot=[2])
    request, _ = task.requests_for(task.episode(0))[0]
    (message,) = request.messages
    assert [type(p).__name__ for p in message.parts] == [
        "AudioPart",
        "TextPart",
        "AudioPart",
        "TextPart",
        "AudioPart",
        "TextPart",
    ]
    assert message.text == "Tab 1TellTell"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--limit", "abc", "--limit must be a count"),
        ("--batch_size", "0", "--batch_size must be at least 1"),
        ("--gen_kwargs", "temperature", "for example --gen_kwargs max_new_tokens=64"),
    ],
)
def test_bad_flag_values_are_clear_errors(toy_dir, flag, value, message):
    code, _, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "chance", flag, value]
    )
    assert code == 2 and message in err and "Traceback" not in err


def test_a_parameter_value_can_raise_the_smallest_k_and_bad_floors_are_named(tmp_path, caplog):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    original = path.read_text()
    path.write_text(
        original.replace("choices: [plain, terse]}", "choices: [plain, terse], min_shots: {terse: 2}}")
    )
    (plain,) = _prepare(folder, "toy_tones", num_fewshot=[0, 1, 2])
    assert plain.shots == [0, 1, 2] and plain.skipped_shots == []
    with caplog.at_level("WARNING", logger="audioeval"):
        (terse,) = _prepare(folder, "toy_tones", num_fewshot=[0, 1, 2], task_args={"style": "terse"})
    assert terse.shots == [2] and terse.skipped_shots == [0, 1]
    assert "skipping k=[0, 1] (this task needs k >= 2 with style=terse)" in caplog.text
    with pytest.raises(UsageError, match="needs k >= 2 with style=terse"):
        _prepare(folder, "toy_tones", num_fewshot=[1], task_args={"style": "terse"})
    for bad, message in (
        ("{loud: 2}", "not among its choices"),
        ("{terse: -1}", r"`parameters.style.min_shots.terse` must be at least 0, got -1"),
    ):
        path.write_text(
            original.replace("choices: [plain, terse]}", f"choices: [plain, terse], min_shots: {bad}}}")
        )
        with pytest.raises(ConfigError, match=message) as err:
            load_task_config(path)
        assert f"{path}:" in str(err.value)


@pytest.mark.parametrize(
    ("task_args", "values"),
    [
        ({"n_episodes": 1e3}, {"n_episodes": 1000}),  # a whole number written as 1e3
        ({"n_episodes": "7"}, {"n_episodes": 7}),  # quoted on the command line
        ({"style": "terse", "n_episodes": 3}, {"style": "terse", "n_episodes": 3}),
    ],
)
def test_task_args_are_read_as_their_declared_type(toy_dir, task_args, values):
    (task,) = _prepare(toy_dir, "toy_tones", task_args=task_args)
    assert {k: task.config.param_values[k] for k in values} == values
    assert all(type(task.config.param_values[k]) is type(v) for k, v in values.items())


@pytest.mark.parametrize(
    ("task_args", "message"),
    [
        ({"n_episodes": 2.5}, "--task_args: parameter 'n_episodes' expects an integer, got 2.5."),
        ({"n_episodes": True}, "--task_args: parameter 'n_episodes' expects an integer, got True."),
        ({"n_episodes": "many"}, "--task_args: parameter 'n_episodes' expects an integer, got 'many'."),
    ],
)
def test_a_task_arg_its_type_cannot_take_is_one_line(toy_dir, task_args, message):
    with pytest.raises(ConfigError) as err:
        _prepare(toy_dir, "toy_tones", task_args=task_args)
    assert str(err.value) == message
