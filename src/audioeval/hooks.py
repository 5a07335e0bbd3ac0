"""The functions a task YAML names: its `parser:`, a judge role's `verdict:` and a `report:`.

Each key takes one of
- a registered name (`last_integer`, `yes_no`): registered with `HookKind.register` by the core's own modules
  and by the benchmark wings under `audioeval.benchmarks` (each wing's `parser`, `verdicts` and `report`
  modules, found by walking that package, so the core names no benchmark);
- `module:function` (`mypackage.scoring:parse`), an importable module;
- `./file.py:function`, a Python file relative to the folder of the YAML file that declares the key, so a
  benchmark brought in with `--include_path` carries its own, as it carries its builder and metrics.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar, cast

from audioeval.errors import ConfigError, unknown_name_message

WINGS_PACKAGE = "audioeval.benchmarks"
#: the signature of one kind of hook (a parser's, a verdict reader's, a report's)
Hook = TypeVar("Hook", bound=Callable[..., Any])


def import_file(path: Path, module_name: str) -> ModuleType:
    """Execute a Python file as module `module_name`, registered in sys.modules (callers cache the result)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


@cache
def _hook_file(path: Path) -> ModuleType:
    # the path's digest keeps two task folders' `hooks.py` apart
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return import_file(path, f"audioeval_hooks.{path.stem}_{digest}")


def wing_modules(module: str) -> list[str]:
    """`audioeval.benchmarks.<wing>.<module>` for every wing that has such a module."""
    package = importlib.import_module(WINGS_PACKAGE)
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        name = f"{WINGS_PACKAGE}.{info.name}.{module}"
        if info.ispkg and importlib.util.find_spec(name) is not None:
            found.append(name)
    return found


class HookKind(Generic[Hook]):
    """One kind of hook (parsers, verdict readers, reports): its registry and how a YAML value resolves.
    `Hook` is the signature the kind's functions have; one named by `module:function` or `./file.py:function`
    is taken to have it (it is called as the kind calls its functions)."""

    def __init__(self, kind: str, core_modules: tuple[str, ...], wing_module: str) -> None:
        self.kind = kind
        self.core_modules = core_modules
        self.wing_module = wing_module
        self._registry: dict[str, Hook] = {}
        self._loaded = False

    def register(self, name: str) -> Callable[[Hook], Hook]:
        def decorate(fn: Hook) -> Hook:
            if name in self._registry and self._registry[name] is not fn:
                raise RuntimeError(f"{self.kind} {name!r} registered twice")
            self._registry[name] = fn
            return fn

        return decorate

    def _load(self) -> None:
        if self._loaded:
            return
        for module in (*self.core_modules, *wing_modules(self.wing_module)):
            importlib.import_module(module)
        self._loaded = True

    def names(self) -> list[str]:
        self._load()
        return sorted(self._registry)

    def resolve(self, spec: Any, base_dir: Path | None, source: str) -> Hook:
        """The function `spec` names. `base_dir`: where `./file.py` is looked for; `source`: the file (and
        key) the spec comes from, for the error message."""
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(
                f"{source}: a {self.kind} must be a registered name, 'module:function' or './file.py:function'."
            )
        if ":" not in spec:
            self._load()
            if spec not in self._registry:
                raise ConfigError(f"{source}: " + unknown_name_message(self.kind, spec, self._registry))
            return self._registry[spec]
        where, _, func = spec.rpartition(":")
        module = self._module(where, base_dir, spec, source)
        fn = getattr(module, func, None)
        if not callable(fn):
            raise ConfigError(f"{source}: {self.kind} {spec!r}: {where} has no function {func!r}.")
        return cast(Hook, fn)

    def _module(self, where: str, base_dir: Path | None, spec: str, source: str) -> ModuleType:
        if where.endswith(".py"):
            path = Path(where)
            path = (path if path.is_absolute() else (base_dir or Path.cwd()) / path).resolve()
            if not path.is_file():
                raise ConfigError(
                    f"{source}: {self.kind} {spec!r}: file {path} does not exist "
                    "(a relative path is read from the folder of the YAML file that names it)."
                )
            try:
                return _hook_file(path)
            except ConfigError:
                raise
            except Exception as err:
                raise ConfigError(
                    f"{source}: {self.kind} {spec!r}: {path} fails to import ({type(err).__name__}: {err})."
                ) from err
        try:
            return importlib.import_module(where)
        except ImportError as err:
            raise ConfigError(f"{source}: {self.kind} {spec!r} cannot be imported ({err}).") from err
