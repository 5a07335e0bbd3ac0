"""A task's judge roles made ready to run: each role's template compiled and its verdict reader looked up.

The YAML shape of `judge:` is checked by the task schema (task.py: JudgeSpec); this step needs the template engine and
the verdict readers, and runs when a task is discovered, so a broken role shows whether or not --judge is
given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from audioeval.config.task import TaskConfig
from audioeval.config.template_bounds import render_bounded
from audioeval.config.templates import (
    Markers,
    compile_file,
    make_environment,
    render_failure,
    template_error_location,
)
from audioeval.config.verdicts import VERDICTS, VerdictReader
from audioeval.errors import ConfigError
from audioeval.types import Message, TextPart


@dataclass
class JudgeRole:
    name: str
    template: jinja2.Template
    template_path: Path
    read_verdict: VerdictReader  # what `verdict:` names
    swap: bool
    when: Callable[..., Any] | None  # the compiled `when:` condition, called with the sample's context
    max_tokens: int

    def messages(self, context: dict[str, Any]) -> tuple[Message, ...]:
        """The judge prompt for one sample: exactly the turns the template writes. The turn markers carry a nonce
        drawn for this render, so a response holding marker-like text stays text inside its turn."""
        marks = Markers()
        try:
            text = render_bounded(self.template, {**context, "turn": marks.turn})
        except Exception as err:  # noqa: BLE001 - any template failure is reported with its location
            where = template_error_location(err, str(self.template_path))
            raise ConfigError(
                f"{where}: error rendering judge role {self.name!r}: {render_failure(err)}"
            ) from err
        turns = marks.split_turns(text, str(self.template_path))
        return tuple(Message(role=role, parts=(TextPart(body.strip()),)) for role, body in turns)


def load_roles(config: TaskConfig) -> list[JudgeRole]:
    if config.judge is None:
        return []
    where = str(config.path)
    env = make_environment([config.dir_of("judge"), config.directory])
    roles = []
    for name, role in config.judge.roles.items():
        reader = VERDICTS.resolve(role.verdict, config.dir_of("judge"), f"{where}: judge role {name!r}")
        path = (config.dir_of("judge") / role.template).resolve()
        try:
            when = env.compile_expression(role.when) if role.when else None
        except jinja2.TemplateSyntaxError as err:
            raise ConfigError(
                f"{where}: judge role {name!r}: `when` is not a Jinja expression: {err}."
            ) from err
        template = compile_file(env, path, f"judge role {name!r} of task {config.name!r}")
        roles.append(JudgeRole(name, template, path, reader, role.swap, when, role.max_tokens))
    return roles
