"""audioeval: an evaluation harness for large audio-language models."""

__version__ = "0.1.0"
