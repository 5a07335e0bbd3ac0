"""The folder a command writes into (`build --output_dir`, `corpora download --to`): checked before any work,
and written through a staging folder beside it that is renamed into place only when everything succeeded."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
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
    parent = nearest_existing(destination.parent)
    if not parent.is_dir():
        raise UsageError(f"{flag} {destination}: {parent} is a file, so the folder cannot be made there.")
    try:
        probe_writable(parent)
    except OSError as err:
        raise UsageError(
            f"{flag} {destination}: {parent} is not writable; choose a folder you can write to."
        ) from err
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


def nearest_existing(path: Path) -> Path:
    """`path` itself when it exists, else its nearest existing parent."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def probe_writable(folder: Path) -> None:
    """Create and remove a file in `folder`, or in its nearest existing parent when it is not there yet (it is
    left uncreated): what a write needs, whoever runs (permission bits do not stop root, a read-only mount or
    an immutable folder do; os.access cannot tell). OSError when it cannot be written."""
    folder = nearest_existing(folder)
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    fd, name = tempfile.mkstemp(dir=folder, prefix=".audioeval-write-probe-")
    os.close(fd)
    os.unlink(name)
