"""The one exception family. Every message names the file, line or field at fault and says what to do."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AudioEvalError(Exception):
    """Base class: the CLI prints the message without a traceback and exits non-zero."""


class ConfigError(AudioEvalError):
    """A task YAML, template or group definition is invalid."""


class UsageError(AudioEvalError):
    """A command-line flag or argument is invalid."""


class DataError(AudioEvalError):
    """Input data (a corpus folder, a JSONL row, an audio file) is missing or malformed."""


class ModelError(AudioEvalError):
    """A model backend cannot be created or used as asked."""


class OtherRankFailed(AudioEvalError):
    """Raised on the ranks that did not fail when another rank of a multi-process run did (distributed.py)."""


class TasksUnscored(AudioEvalError):
    """The run finished and wrote its results, but some task got no answer at all (every request failed)."""


def close_matches(name: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    candidates = sorted(set(candidates))
    matches = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    if not matches:
        matches = [c for c in candidates if name.lower() in c.lower()][:n]
    return matches


def unknown_name_message(kind: str, name: str, candidates: Iterable[str], hint: str = "") -> str:
    candidates = list(candidates)
    matches = close_matches(name, candidates)
    msg = f"unknown {kind} {name!r}."
    if matches:
        msg += " Did you mean: " + ", ".join(matches) + "?"
    elif candidates:
        shown = sorted(candidates)[:20]
        msg += " Known: " + ", ".join(shown) + (" ..." if len(candidates) > 20 else "") + "."
    if hint:
        msg += " " + hint
    return msg
