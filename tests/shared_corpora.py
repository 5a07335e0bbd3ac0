"""Where the real corpora shared by every checkout live: `../shared/corpora/` from the repository root (the same
relative path in CI). AUDIOEVAL_SHARED_CORPORA names another folder of them (e.g. for a second worktree).
Tests that need one skip, saying where they looked, when it is absent; nothing is ever copied into the repo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_corpus(name: str) -> Path:
    base = os.environ.get("AUDIOEVAL_SHARED_CORPORA")
    return (Path(base) if base else ROOT.parent / "shared" / "corpora") / name


def needs_corpus(name: str, title: str):
    path = shared_corpus(name)
    return pytest.mark.skipif(
        not path.is_dir(),
        reason=f"no {title} copy at {path} (../shared/corpora/{name} from the repository root, or "
        "$AUDIOEVAL_SHARED_CORPORA/{name})".replace("{name}", name),
    )
