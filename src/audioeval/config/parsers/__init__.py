"""Response parsers: raw model text -> prediction string, or None when nothing usable is found.

A parser is a function `(response: str, **args) -> str | None`. A task's `parser:` names one: registered
with `@register("name")` (the generic ones in this package, a benchmark's own in its wing's `parser`
module), `module:function`, or `./file.py:function` beside the task YAML (see audioeval.hooks).
A parser that declares a `sample_info` keyword also receives the sample's info dict (task, k, episode
metadata), for answers whose format differs per sample.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from audioeval.hooks import HookKind

#: `(response, **args) -> prediction or None`; may also take `sample_info=`
Parser = Callable[..., str | None]
PARSERS: HookKind[Parser] = HookKind(
    "parser", core_modules=("audioeval.config.parsers.common",), wing_module="parser"
)
register = PARSERS.register


def get_parser(name: str, args: dict | None = None, source: str = "", base_dir: Path | None = None) -> Parser:
    fn = PARSERS.resolve(name, base_dir, source)
    return partial(fn, **(args or {})) if args else fn
