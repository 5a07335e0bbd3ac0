"""A backend's --model_args are its __init__ keyword arguments, each declared once (type, default, bounds,
description): the registry checks them before anything loads, `--model NAME --model_args list` shows them,
and a user's backend that declares nothing special keeps working as it did."""

from __future__ import annotations

import textwrap

import pytest

from audioeval.errors import ModelError, UsageError
from audioeval.models.base import declared_args
from audioeval.models.registry import create_model, get_model_class
from tests.conftest import TOY, run_cli

USER_BACKEND = '''
from typing import TYPE_CHECKING, Annotated, Any

from audioeval.config.fields import Arg
from audioeval.models.base import Model
from audioeval.types import Response

if TYPE_CHECKING:
    from somewhere_not_installed import Tokenizer


class Plain(Model):
    """Written the way backends were before arguments had declarations."""

    name = "plain"

    def __init__(self, *, checkpoint: str, beams: int = 1, temperature: float = 0.0, greedy: bool = True,
                 extra=None, tokenizer: "Tokenizer | None" = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.received = dict(checkpoint=checkpoint, beams=beams, temperature=temperature, greedy=greedy,
                             extra=extra, tokenizer=tokenizer)

    def generate(self, requests):
        return [Response(text="x") for _ in requests]


class Bare(Model):
    name = "bare"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def generate(self, requests):
        return [Response(text="x") for _ in requests]


class Bounded(Model):
    name = "bounded"

    def __init__(self, *, rate: Annotated[int, Arg("words per minute", ge=80, le=450)] = 160, **kwargs: Any):
        super().__init__(**kwargs)
        self.rate = rate

    def generate(self, requests):
        return [Response(text="x") for _ in requests]
'''


@pytest.fixture
def backend_file(tmp_path):
    path = tmp_path / "user_backend.py"
    path.write_text(textwrap.dedent(USER_BACKEND))
    return path


def test_a_backend_written_before_declarations_gets_its_arguments_as_given(backend_file):
    args = {
        "checkpoint": 7,
        "beams": 4,
        "temperature": 1,
        "greedy": False,
        "extra": [1, "x"],
        "tokenizer": "t",
    }
    model = create_model(f"{backend_file}:Plain", dict(args), batch_size=2, seed=3)
    # nothing converted: a number given for a string argument, an int for a float one, an unannotated value
    assert model.received == args and (model.batch_size, model.seed) == (2, 3)
    assert create_model(f"{backend_file}:Bare", {}, 1, 0).name == "bare"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("Plain", {}, "--model plain needs --model_args checkpoint=...: it has no default."),
        ("Plain", {"checkpoint": "c", "beam": 2}, "--model_args: unknown argument for model 'plain' 'beam'. Did you mean: beams?"),
        ("Plain", {"checkpoint": "c", "beams": 2.5}, "--model_args beams=2.5: model 'plain' expects an integer, got 2.5."),
        ("Plain", {"checkpoint": "c", "beams": True}, "--model_args beams=True: model 'plain' expects an integer, got True."),
        ("Plain", {"checkpoint": "c", "greedy": "yes"}, "--model_args greedy=yes: model 'plain' expects true or false, got 'yes'."),
        ("Plain", {"checkpoint": "c", "temperature": "hot"}, "--model_args temperature=hot: model 'plain' expects a number, got 'hot'."),
        ("Bare", {"x": 1}, "--model_args: unknown argument for model 'bare' 'x'."),
        ("Bounded", {"rate": 79}, "--model_args rate=79: model 'bounded' must be from 80 to 450, got 79."),
    ],
)  # fmt: skip
def test_arguments_a_declaration_refuses_are_one_line_naming_the_argument(backend_file, name, args, message):
    with pytest.raises(ModelError) as err:
        create_model(f"{backend_file}:{name}", args, 1, 0)
    assert str(err.value) == message


def test_an_annotation_that_does_not_resolve_takes_anything(backend_file):
    cls = get_model_class(f"{backend_file}:Plain")
    assert set(declared_args(cls)) == {"checkpoint", "beams", "temperature", "greedy", "extra", "tokenizer"}
    assert (
        create_model(f"{backend_file}:Plain", {"checkpoint": "c", "tokenizer": 5}, 1, 0).received["tokenizer"]
        == 5
    )


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--model", "tts"],
            ["--model tts: ", "speaking_rate  int from 80 to 450  160", "text_model", "voice"],
        ),
        (
            ["--model", "realtime"],
            ["max_output_tokens", "int from 1 to 4096 or `inf`", "session_lifetime", "float ≥ 1"],
        ),
        (["--model", "chance"], ["--model chance: ", "(no --model_args)"]),
        (["--model", "toy-pitch", "--include_path", str(TOY)], ["--model toy-pitch", "(no --model_args)"]),
    ],
)
def test_model_args_list_shows_the_declarations(flags, expected):
    code, out, err = run_cli([*flags, "--model_args", "list"])
    assert code == 0, err
    for text in expected:
        assert text in out


def test_task_args_list_shows_each_task_s_parameters():
    code, out, err = run_cli(["--tasks", "toy_tones", "--include_path", str(TOY), "--task_args", "list"])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "toy_tones:" and lines[1].split() == ["parameter", "type", "default", "meaning"]
    assert lines[2].split() == ["n_episodes", "int", "12"]
    assert lines[3].split()[:4] == ["style", "str,", "one", "of:"] and "dataset" in lines[4]


@pytest.mark.parametrize(
    ("gen_kwargs", "message"),
    [
        ({"until": 5}, "--gen_kwargs: model 'chance': until expects a string or a list of strings, got 5."),
        ({"max_new_tokens": 0}, "--gen_kwargs: model 'chance': max_new_tokens must be at least 1, got 0."),
        ({"temperature": -1}, "--gen_kwargs: model 'chance': temperature must be at least 0, got -1."),
    ],
)
def test_generation_settings_are_checked_against_their_declarations(gen_kwargs, message):
    cls = get_model_class("chance")
    with pytest.raises(UsageError) as err:
        cls.check_gen_kwargs(gen_kwargs, "--gen_kwargs", {})
    assert str(err.value) == message
    cls.check_gen_kwargs(
        {"until": ["\n"], "max_tokens": 3, "temperature": None, "top_k": 2}, "--gen_kwargs", {}
    )
