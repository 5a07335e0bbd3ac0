"""The later tasks' episodes are made ahead into the episode store with the workers the feed leaves idle, so a
task whose episodes are slow to make does not starve the endpoint when the feed gets there. Made once, read
back identical, left to the feed once it has started a task, and never ahead of jobs someone waits for."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import numpy as np
import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.run import synthesis
from audioeval.run.episode_store import EpisodeStore, clips_in_order, episode_key
from audioeval.run.prepared import prepare_tasks
from audioeval.run.synthesis import EpisodeSource


class RecordingPool:
    """Runs each job on the calling thread; notes (task's builder config, index, sent back) of each episode."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str | None, int, bool]] = []
        self.lock = threading.Lock()

    def submit(self, fn, *args):
        if fn is synthesis.make_episode:
            recipe, index = args[0], args[1]
            back = args[4] if len(args) > 4 else True
            with self.lock:
                self.jobs.append((recipe.config_name, index, back))
        future: Future = Future()
        future.set_result(fn(*args))
        return future


@pytest.fixture
def tasks():
    registry = TaskRegistry.discover([])
    names = ["audioicl_audio_remap", "audioicl_morse_code", "audioicl_audio_count"]
    return prepare_tasks(registry, names, num_fewshot=[0, 1], task_args={}, limit="3", seed=0, gen_kwargs={})


@pytest.fixture
def pool(monkeypatch):
    pool = RecordingPool()
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: pool)
    return pool


def _wait_until_stored(store: EpisodeStore, task, timeout: float = 60) -> None:
    key = episode_key(task)
    deadline = time.monotonic() + timeout
    while store.stored_indices(key, task.indices) != set(task.indices):
        assert time.monotonic() < deadline, f"{task.name}: not made ahead"
        time.sleep(0.02)


def _same(a: dict, b: dict) -> bool:
    clips_a, clips_b = clips_in_order(a), clips_in_order(b)
    return (
        a["query"]["label"] == b["query"]["label"]
        and len(clips_a) == len(clips_b)
        and all(np.array_equal(x.pcm16, y.pcm16) for x, y in zip(clips_a, clips_b, strict=True))
    )


def test_later_tasks_are_made_ahead_once_and_read_back_identical(tmp_path, tasks, pool):
    first, *later = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    source.store_ahead([(t, t.indices) for t in tasks])
    for task in later:
        _wait_until_stored(store, task)
    ahead = [(name, index) for name, index, back in pool.jobs if not back]
    assert sorted(ahead) == sorted((t.config.builder_config, i) for t in later for i in t.indices)
    assert store.stored_indices(episode_key(first), first.indices) == set()  # the first task is the feed's
    pool.jobs.clear()
    for task in later:
        got = list(source.episodes(task, task.indices))
        assert [index for index, _, _ in got] == task.indices
        assert all(seconds is not None for _, _, seconds in got)  # made in this run, not by an earlier one
        for index, episode, _ in got:
            assert _same(episode, task.builder.episode(index))
    assert pool.jobs == []  # none made again
    assert source.synthesized == sum(len(t.indices) for t in later)
    source.close()
    store.close()


def test_a_task_the_feed_has_started_is_left_to_it(tmp_path, tasks, pool):
    first, second, third = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    feeding = source.episodes(second, second.indices)
    next(feeding)  # the feed is inside the task: its episodes are made, not stored yet
    source.store_ahead([(t, t.indices) for t in tasks])
    _wait_until_stored(store, third)
    assert [index for index, _, _ in feeding] == second.indices[1:]  # the rest of the feed's episodes
    made = [index for name, index, _ in pool.jobs if name == second.config.builder_config]
    assert sorted(made) == sorted(set(made))  # none made twice
    source.close()
    store.close()


def test_jobs_made_ahead_wait_for_the_workers_that_jobs_someone_waits_for_hold(tmp_path, tasks, pool):
    first, second, _ = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    with source._workers_free:
        source._urgent = 2  # both workers busy with the feed's episodes
    source.store_ahead([(first, first.indices), (second, second.indices)])
    time.sleep(0.5)
    assert pool.jobs == []
    with source._workers_free:
        source._urgent = 0
        source._workers_free.notify_all()
    _wait_until_stored(store, second)
    source.close()
    store.close()


def test_nothing_is_made_ahead_without_a_store_that_keeps_episodes_or_without_workers(tmp_path, tasks, pool):
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    capped = EpisodeStore(tmp_path / "capped.sqlite", cap_bytes=0)
    for source in (EpisodeSource(None, workers=2), EpisodeSource(store, workers=0), EpisodeSource(capped, 2)):
        source.store_ahead([(t, t.indices) for t in tasks])
        source.close()
    assert pool.jobs == []
    store.close()
    capped.close()
