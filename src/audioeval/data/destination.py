"""The folder a command writes into (`build --output_dir`, `corpora download --to`): checked before any work,
and written through a staging folder beside it that is renamed into place only when everything succeeded.

A failure, Ctrl-C or SIGTERM removes the staging folder (`interrupt_on_terminate` turns SIGTERM into the
KeyboardInterrupt that Ctrl-C raises); what only SIGKILL or a power cut leaves behind, the next command into
the same place removes, once the process that made it is gone."""

from __future__ import annotations

import errno
import glob
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from audioeval.errors import UsageError

log = logging.getLogger("audioeval")


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
    """An empty staging folder next to `destination` (same file system, so the final rename is atomic),
    `.<name>.<purpose>-<pid>`; those an earlier command into the same place left behind are removed first."""
    staging = destination.parent / f".{destination.name}.{purpose}-{os.getpid()}"
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_staging(destination, purpose)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as err:
        raise UsageError(f"{flag} {destination}: cannot write there ({err.strerror or err}).") from err
    return staging


def remove_stale_staging(destination: Path, purpose: str) -> None:
    """Remove the staging folders of `destination` whose process is gone (killed with SIGKILL, a crash), saying
    so; one whose process still runs (another command writing the same place) is named and left alone."""
    pattern = f".{glob.escape(destination.name)}.{purpose}-*"
    for old in sorted(destination.parent.glob(pattern)):
        pid = old.name.rsplit("-", 1)[1]
        if not pid.isdigit() or int(pid) == os.getpid() or not old.is_dir():
            continue
        if _running(int(pid)):
            log.warning("%s belongs to process %s, which is still running: left alone.", old, pid)
            continue
        size = _size(old)
        shutil.rmtree(old, ignore_errors=True)
        log.warning(
            "removed %s (%.1f MB), left by an earlier command into %s whose process (%s) is gone.",
            old, size / 1e6, destination, pid,
        )  # fmt: skip


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


@contextmanager
def interrupt_on_terminate() -> Iterator[None]:
    """Inside, SIGTERM raises KeyboardInterrupt as Ctrl-C does, so the `except`/`finally` that remove a
    staging folder run (Python's default for SIGTERM ends the process at once, skipping them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def written_through_staging(flag: str, destination: Path, purpose: str) -> Iterator[Path]:
    """A staging folder beside `destination` for the caller to fill. On success it becomes `destination` (one
    there already is replaced); on a failure or an interrupt (Ctrl-C, SIGTERM) it is removed: nothing
    half-written is ever left at `destination`."""
    with interrupt_on_terminate():
        staging = make_staging(flag, destination, purpose)
        try:
            yield staging
            if destination.exists():
                shutil.rmtree(destination)
            staging.rename(destination)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


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
