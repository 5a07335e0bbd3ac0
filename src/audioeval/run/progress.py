"""Progress bars: tqdm's on rank 0 when progress is shown, a silent stand-in otherwise (a tqdm made with
`disable=True` still starts tqdm's monitor thread, which would outlive a run called from Python)."""

from __future__ import annotations

from typing import Any

from tqdm.auto import tqdm


class _Silent:
    def update(self, n: float = 1) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def progress_bar(show: bool, **kwargs: Any) -> Any:
    """A bar with tqdm's `kwargs` when `show`, else one that shows nothing and starts no thread."""
    return tqdm(dynamic_ncols=True, **kwargs) if show else _Silent()
