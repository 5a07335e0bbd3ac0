"""Progress bars: tqdm's on rank 0 when progress is shown, a silent stand-in otherwise (a tqdm made with
`disable=True` still starts tqdm's monitor thread, which would outlive a run called from Python)."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

log = logging.getLogger("audioeval")


class _Silent:
    def update(self, n: float = 1) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


class ReaderSafeStream:
    """A terminal stream that drops what cannot be written once its reader is gone (`audioeval ... |& head`):
    a bar updated from a thread must not raise there, where it would leave tqdm's lock behind it and every
    other bar waiting for it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text) or 0)
        except (OSError, ValueError):  # a closed pipe, a closed file
            return 0

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def progress_bar(show: bool, **kwargs: Any) -> Any:
    """A bar with tqdm's `kwargs` when `show`, else one that shows nothing and starts no thread."""
    if not show:
        return _Silent()
    return tqdm(dynamic_ncols=True, file=ReaderSafeStream(kwargs.pop("file", sys.stderr)), **kwargs)


@contextmanager
def said_if_slow(message: str, after_s: float = 2.0) -> Iterator[None]:
    """Log `message` if the block is still running after `after_s` seconds: a slow stretch says what it is,
    while a quick one (or one that ends in a one-line error) prints nothing."""
    timer = threading.Timer(after_s, log.info, (message,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
