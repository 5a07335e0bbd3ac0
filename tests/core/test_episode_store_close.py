"""Closing the episode store: it waits for the calls in progress on other threads (closing an SQLite connection
under a running statement can crash the process), and once closed it reads and writes nothing."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from audioeval.run.episode_store import EpisodeStore, StoredAudioMissing, encode_episode
from audioeval.types import AudioClip


def _episode(seed: int) -> dict:
    clip = AudioClip.from_array(0.3 * np.random.default_rng(seed).standard_normal(8000), 16000)
    return {"index": seed, "query": {"clips": [{"audio": clip}], "label": str(seed)}}


class HeldWrite:
    """A put_many on another thread, held inside the store's call until `release`."""

    def __init__(self, store: EpisodeStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered, self.released = threading.Event(), threading.Event()
        real = EpisodeStore._put_many

        def held(store_self, db, config, episodes):
            self.entered.set()
            assert self.released.wait(30)
            return real(store_self, db, config, episodes)

        monkeypatch.setattr(EpisodeStore, "_put_many", held)
        self.thread = threading.Thread(
            target=store.put_many, args=("config", {7: encode_episode(_episode(7))})
        )
        self.thread.start()
        assert self.entered.wait(30)


def test_close_waits_for_a_write_in_progress_and_the_write_lands(tmp_path, monkeypatch):
    path = tmp_path / "episodes.sqlite"
    store = EpisodeStore(path)
    write = HeldWrite(store, monkeypatch)
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # the write holds the connection: close waits for it
    write.released.set()
    write.thread.join(30)
    closer.join(30)
    assert not closer.is_alive()
    monkeypatch.undo()
    again = EpisodeStore(path)
    assert list(again.get_many("config", [7])) == [7]
    again.close()


def test_a_closed_store_reads_and_writes_nothing(tmp_path):
    path = tmp_path / "episodes.sqlite"
    store = EpisodeStore(path)
    store.put_many("config", {1: encode_episode(_episode(1))})
    lazy = store.get_many("config", [1])[1]["query"]["clips"][0]["audio"]  # its samples not read yet
    store.close()
    assert store.get_many("config", [1]) == {}
    store.put_many("config", {2: encode_episode(_episode(2))})
    assert store.size() == 0
    with pytest.raises(StoredAudioMissing, match="closed"):
        lazy.pcm  # noqa: B018
    again = EpisodeStore(path)
    assert list(again.get_many("config", [1, 2])) == [1]  # the write after close did not happen
    again.close()


def test_close_leaves_the_connections_to_a_call_that_outlasts_its_wait(tmp_path, monkeypatch, caplog):
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    write = HeldWrite(store, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        store.close(wait_s=0.1)
    assert "still in progress" in caplog.text
    write.released.set()
    write.thread.join(30)
    assert not write.thread.is_alive()  # its connection was not closed under it: the write finished
    monkeypatch.undo()
    again = EpisodeStore(tmp_path / "episodes.sqlite")
    assert list(again.get_many("config", [7])) == [7]
    again.close()
