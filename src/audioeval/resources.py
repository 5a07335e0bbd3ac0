"""Where the shipped task configs, dataset builders and metric modules live.

In a wheel they are carried inside the package as `audioeval/_resources/{tasks,datasets_builders,metrics}`;
in a source checkout (editable install or PYTHONPATH=src) they are the top-level folders of the repository.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def resource_root() -> Path:
    installed = _PACKAGE_DIR / "_resources"
    if (installed / "tasks").is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.parent
    if (checkout / "tasks").is_dir() and (checkout / "pyproject.toml").is_file():
        return checkout
    raise RuntimeError(
        f"audioeval cannot find its tasks/, datasets_builders/ and metrics/ folders next to {_PACKAGE_DIR}; "
        "reinstall the package with `pip install .` from the repository root."
    )


def tasks_dir() -> Path:
    return resource_root() / "tasks"


def builders_dir() -> Path:
    return resource_root() / "datasets_builders"


def metrics_dir() -> Path:
    return resource_root() / "metrics"
