"""audioeval: an evaluation harness for large audio-language models."""

from audioeval.data import by_name as _by_name
from audioeval.version import __version__

__all__ = ["__version__"]

# `datasets.load_dataset("<benchmark>", ...)` by name: wired up when `datasets` is imported (nothing heavy here)
_by_name.install()
