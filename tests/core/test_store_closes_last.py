"""A run that stops (its endpoint gone) closes the episode store only once no thread is still storing episodes
in it: the feed stores the episodes it made when it stops, and closing the store's connection under that write
crashed the process (SIGSEGV) instead of reporting the endpoint."""

from __future__ import annotations

import threading
import time

import pytest

import audioeval
from audioeval import Model
from audioeval.errors import DataError
from audioeval.run.episode_store import EpisodeStore


class Unreachable(Model):
    name = "unreachable"

    def generate(self, requests):
        time.sleep(0.2)  # a few episodes are made and waiting to be stored when the run stops
        raise DataError("the model's endpoint is gone")


def test_the_episode_store_closes_after_its_last_write(tmp_path, monkeypatch):
    writing, at_close = [0], []
    lock = threading.Lock()
    put_many, close = EpisodeStore.put_many, EpisodeStore.close

    def slow_put_many(self, *args, **kwargs):
        with lock:
            writing[0] += 1
        try:
            time.sleep(0.3)
            return put_many(self, *args, **kwargs)
        finally:
            with lock:
                writing[0] -= 1

    def recorded_close(self):
        with lock:
            at_close.append(writing[0])
        return close(self)

    monkeypatch.setattr(EpisodeStore, "put_many", slow_put_many)
    monkeypatch.setattr(EpisodeStore, "close", recorded_close)
    with pytest.raises(DataError, match="endpoint is gone"):
        audioeval.evaluate(tasks=["audioicl_audio_count"], model=Unreachable(), limit=12, num_fewshot=0,
                           cache_dir=str(tmp_path / "cache"), no_progress=True)  # fmt: skip
    assert at_close == [0]  # no write in progress when the store closed
