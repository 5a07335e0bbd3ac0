"""Response parsers: raw model text -> prediction string, or None when nothing usable is found.

A parser is a function `(response: str, **args) -> str | None` registered with `@register("name")`.
A parser that declares a `sample_info` keyword also receives the sample's info dict (task, k, episode
metadata), for answers whose format differs per sample.
Every module in this package is imported on first use, so a new benchmark adds parsers by adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import partial

from audioeval.errors import ConfigError, unknown_name_message

Parser = Callable[..., str | None]
_REGISTRY: dict[str, Parser] = {}
_loaded = False


def register(name: str) -> Callable[[Parser], Parser]:
    def decorate(fn: Parser) -> Parser:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise RuntimeError(f"parser {name!r} registered twice")
        _REGISTRY[name] = fn
        return fn

    return decorate


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True


def get_parser(name: str, args: dict | None = None, source: str = "") -> Callable[[str], str | None]:
    _load_all()
    if name not in _REGISTRY:
        raise ConfigError(f"{source}: " + unknown_name_message("parser", name, _REGISTRY))
    fn = _REGISTRY[name]
    return partial(fn, **(args or {})) if args else fn


def parser_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)
