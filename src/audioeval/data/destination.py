"""The folder a command writes into (`build --output_dir`, `corpora download --to`): checked before any work,
and written through a staging folder beside it that is renamed into place only when everything succeeded."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from audioeval.errors import UsageError


def fresh_destination(flag: str, path: Path, overwrite: bool) -> Path:
    """`path` made absolute, refused with one line when it cannot become the folder the command writes."""
    destination = path.expanduser().resolve()
    if destination.exists() and not destination.is_dir():
        raise UsageError(f"{flag} {destination} is a file, not a folder; choose a folder.")
    if destination.is_dir() and any(destination.iterdir()) and not overwrite:
        raise UsageError(
            f"{flag} {destination} exists and is not empty; choose another folder or pass --overwrite."
        )
    parent = _existing_parent(destination)
    if not parent.is_dir():
        raise UsageError(f"{flag} {destination}: {parent} is a file, so the folder cannot be made there.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {destination}: {parent} is not writable; choose a folder you can write to.")
    return destination


def make_staging(flag: str, destination: Path, purpose: str) -> Path:
    """An empty staging folder next to `destination` (same file system, so the final rename is atomic)."""
    staging = destination.parent / f".{destination.name}.{purpose}-{os.getpid()}"
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as err:
        raise UsageError(f"{flag} {destination}: cannot write there ({err.strerror or err}).") from err
    return staging


def _existing_parent(path: Path) -> Path:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent
