"""Progress bars: tqdm's on rank 0 when progress is shown, a silent stand-in otherwise (a tqdm made with
`disable=True` still starts tqdm's monitor thread, which would outlive a run called from Python)."""

from __future__ import annotations

import logging
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


def progress_bar(show: bool, **kwargs: Any) -> Any:
    """A bar with tqdm's `kwargs` when `show`, else one that shows nothing and starts no thread."""
    return tqdm(dynamic_ncols=True, **kwargs) if show else _Silent()


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
