"""audioeval: an evaluation harness for large audio-language models."""

from audioeval import load_by_name as _load_by_name

__version__ = "0.1.0"

# `datasets.load_dataset("<benchmark>", ...)` by name: wired up when `datasets` is imported (nothing heavy here)
_load_by_name.install()
