"""The reference model's study (the `shortcut` baseline's probe episodes, prefetched on a thread of their own)
ends with the run (AudioRemap: a task without outlines, whose probes are synthesized): a run that fails leaves no study running behind it, writing to a closed episode store."""

from __future__ import annotations

import threading
import time

import pytest

import audioeval
from audioeval import Model
from audioeval.errors import DataError
from audioeval.run import synthesis


class Unreachable(Model):
    """A model whose every call fails in a way that stops the run."""

    name = "unreachable"

    def generate(self, requests):
        raise DataError("the model's endpoint is gone")


def test_a_failed_run_leaves_no_reference_study_behind(tmp_path, monkeypatch):
    make_episode = synthesis.make_episode

    def slow_probe(
        *args, **kwargs
    ):  # the study's episodes take a while: it is still at work when the run fails
        time.sleep(0.1)
        return make_episode(*args, **kwargs)

    monkeypatch.setattr(synthesis, "make_episode", slow_probe)
    before = set(threading.enumerate())
    with pytest.raises(DataError):
        audioeval.evaluate(tasks=["audioicl_audio_remap"], model=Unreachable(), limit=1, num_fewshot=0,
                           cache_dir=str(tmp_path / "cache"), no_progress=True)  # fmt: skip
    left = {t.name for t in set(threading.enumerate()) - before}
    assert "audioeval-studies" not in left
