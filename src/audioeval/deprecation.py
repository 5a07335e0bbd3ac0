"""Import paths of the previous release (0.1), kept working for one release with a DeprecationWarning.

The modules that moved into the layer folders are found under their old names (`import audioeval.builders`
gives `audioeval.data.builders`), and names that lived in an old module that is now a package
(`audioeval.run.RunConfig`, `audioeval.config.TaskConfig`, `audioeval.models.create_model`) are found on the
package. Each says where the name lives now; what users should import is `audioeval` itself
(docs/python_api.md). This table goes in the release after 0.2.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import warnings
from types import ModuleType
from typing import Any

#: old module -> where it lives now
MOVED_MODULES: dict[str, str] = {
    "audioeval.about": "audioeval.data.about",
    "audioeval.builders": "audioeval.data.builders",
    "audioeval.card": "audioeval.data.card",
    "audioeval.hub": "audioeval.data.hub",
    "audioeval.dataset_location": "audioeval.data.stored",
    "audioeval.dataset_episodes": "audioeval.data.stored_episodes",
    "audioeval.corpora": "audioeval.data.corpora",
    "audioeval.parsers": "audioeval.config.parsers",
    "audioeval.registry": "audioeval.config.registry",
    "audioeval.templates": "audioeval.config.templates",
    "audioeval.judges": "audioeval.config",
    "audioeval.judges.verdicts": "audioeval.config.verdicts",
    "audioeval.judges.roles": "audioeval.config.judge_roles",
    "audioeval.judges.panel": "audioeval.run.judging",
    "audioeval.reports": "audioeval.results.reports",
    "audioeval.aggregate": "audioeval.results.aggregate",
    "audioeval.outputs": "audioeval.results.outputs",
    "audioeval.stats": "audioeval.results.stats",
    "audioeval.scoring": "audioeval.results.scoring",
    "audioeval.score_rows": "audioeval.results.score_rows",
    "audioeval.run_health": "audioeval.results.run_health",
    "audioeval.cache": "audioeval.run.cache",
    "audioeval.distributed": "audioeval.run.distributed",
    "audioeval.evaluator": "audioeval.run.evaluator",
    "audioeval.feed": "audioeval.run.feed",
    "audioeval.prepared": "audioeval.run.prepared",
    "audioeval.reference_models": "audioeval.run.reference_models",
    "audioeval.requirements": "audioeval.run.requirements",
    "audioeval.serving": "audioeval.run.serving",
    "audioeval.api_client": "audioeval.models.api.client",
    "audioeval.concurrency": "audioeval.models.api.concurrency",
    "audioeval.endpoint_stats": "audioeval.models.endpoint_stats",
}

#: package -> {old name: module that holds it now}, for names of an old module that became a package
MOVED_NAMES: dict[str, dict[str, str]] = {
    "audioeval.run": {
        "RunConfig": "audioeval.run.settings",
        "run_evaluation": "audioeval.run.conductor",
        "default_cache_dir": "audioeval.run.settings",
        "check_judge_args": "audioeval.run.planning",
    },
    "audioeval.config": {
        name: "audioeval.config.task"
        for name in ("TaskConfig", "GroupConfig", "TaskParameter", "load_task_config", "load_group_config")
    },
    "audioeval.models": {
        "get_model_class": "audioeval.models.registry",
        "create_model": "audioeval.models.registry",
        "model_names": "audioeval.models.registry",
        "Model": "audioeval.models.base",
        "StreamingModel": "audioeval.models.base",
    },
}


def _caller_stacklevel() -> int:
    """The `stacklevel` of the first frame outside this module, the import machinery and a package's
    `__getattr__`, so the warning points at the user's import line (where Python's default filters show it).
    `warnings.warn` itself skips the import machinery's frames, so they are not counted."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _ours(frame.f_code.co_filename, frame.f_code.co_name):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is not None and "importlib" not in frame.f_code.co_filename:
            level += 1
    return level


def _ours(filename: str, function: str) -> bool:
    return (
        filename == __file__
        or "importlib" in filename
        or (function == "__getattr__" and filename.startswith(_PACKAGE_DIR))
    )


_PACKAGE_DIR = os.path.dirname(__file__)


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} is deprecated and goes in the release after 0.2: it is now {new}. Import the public names "
        "from `audioeval` itself (docs/python_api.md lists them).",
        DeprecationWarning,
        stacklevel=_caller_stacklevel(),
    )


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: Any) -> ModuleType:
        _warn(spec.name, self.new)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """The module it stands for is loaded already."""


class _MovedModules(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        new = MOVED_MODULES.get(fullname)
        return importlib.util.spec_from_loader(fullname, _Alias(new)) if new is not None else None


def install() -> None:
    """Old module paths resolve from now on (once per process)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())  # before the path finder: an old name never loads twice


def moved_name(package: str, name: str) -> Any:
    """For a package's module `__getattr__`: a name of the old module, with its warning."""
    home = MOVED_NAMES.get(package, {}).get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(f"{package}.{name}", f"{home}.{name}")
    value = getattr(importlib.import_module(home), name)
    setattr(sys.modules[package], name, value)  # `from package import name` looks twice: warn once
    return value
