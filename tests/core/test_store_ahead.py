"""The later tasks' episodes are made ahead into the episode store with the workers the feed leaves idle, so a
task whose episodes are slow to make does not starve the endpoint when the feed gets there. Made once, read
back identical, counted once when read, left to the feed once it has started a task (after the jobs already
running for it are stored), never ahead of jobs someone waits for, and given up for a task at its first
failure (the feed makes that episode and raises its error)."""

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


class Pool:
    """Runs the feed's jobs on the calling thread at once; the jobs made ahead (and, with `hold_all`, every
    job) wait until the test releases them. Notes (builder config, index, made ahead) of each episode made."""

    def __init__(self, hold_all: bool = False, failing: str | None = None) -> None:
        self.hold_all, self.failing = hold_all, failing
        self.made: list[tuple[str | None, int, bool]] = []
        self.held: list[tuple[Future, object, tuple, dict]] = []
        self.lock = threading.Lock()

    def submit(self, fn, *args, **kwargs):
        future: Future = Future()
        ahead = kwargs.get("return_episode", True) is False
        if self.hold_all or ahead:
            future.set_running_or_notify_cancel()  # a worker has it: it cannot be cancelled any more
            with self.lock:
                self.held.append((future, fn, args, kwargs))
            return future
        self._run(future, fn, args, kwargs)
        return future

    def _run(self, future, fn, args, kwargs) -> None:
        if fn is synthesis.make_episode:
            ahead = kwargs.get("return_episode", True) is False
            with self.lock:
                self.made.append((args[0].config_name, args[1], ahead))
            if ahead and args[0].config_name == self.failing:
                future.set_exception(RuntimeError("the builder failed"))
                return
        future.set_result(fn(*args, **kwargs))

    def release(self) -> int:
        with self.lock:
            held, self.held = self.held, []
        for job in held:
            self._run(*job)
        return len(held)

    def wait_for_held(self, count: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"{len(self.held)} jobs held, {count} expected"
            time.sleep(0.01)


@pytest.fixture
def tasks():
    registry = TaskRegistry.discover([])
    names = ["audioicl_audio_remap", "audioicl_morse_code", "audioicl_audio_count"]
    return prepare_tasks(registry, names, num_fewshot=[0, 1], task_args={}, limit="4", seed=0, gen_kwargs={})


def _pool(monkeypatch, **kwargs) -> Pool:
    pool = Pool(**kwargs)
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: pool)
    return pool


def _released_until_stored(pool: Pool, store: EpisodeStore, task, timeout: float = 60) -> None:
    key = episode_key(task)
    deadline = time.monotonic() + timeout
    while store.stored_indices(key, task.indices) != set(task.indices):
        assert time.monotonic() < deadline, f"{task.name}: not made ahead"
        pool.release()
        time.sleep(0.01)


def _same(a: dict, b: dict) -> bool:
    clips_a, clips_b = clips_in_order(a), clips_in_order(b)
    return (
        a["query"]["label"] == b["query"]["label"]
        and len(clips_a) == len(clips_b)
        and all(np.array_equal(x.pcm16, y.pcm16) for x, y in zip(clips_a, clips_b, strict=True))
    )


def test_later_tasks_are_made_ahead_once_read_back_identical_and_counted_when_read(
    tmp_path, tasks, monkeypatch
):
    pool = _pool(monkeypatch)
    first, *later = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    source.store_ahead([(t, t.indices) for t in tasks])
    feeding = source.episodes(first, first.indices)
    next(feeding)  # the feed has started: episodes may be made ahead
    for task in later:
        _released_until_stored(pool, store, task)
    ahead = [(name, index) for name, index, ahead in pool.made if ahead]
    assert sorted(ahead) == sorted((t.config.builder_config, i) for t in later for i in t.indices)
    list(feeding)
    before = source.synthesized
    assert before == len(first.indices)  # made ahead, not read yet: not counted
    made_before = len(pool.made)
    for task in later:
        got = list(source.episodes(task, task.indices))
        assert [index for index, _, _ in got] == task.indices
        assert all(seconds is not None for _, _, seconds in got)  # made in this run, not by an earlier one
        for index, episode, _ in got:
            assert _same(episode, task.builder.episode(index))
    assert len(pool.made) == made_before  # none made again
    assert source.synthesized == before + sum(len(t.indices) for t in later)
    source.close()
    store.close()


def test_the_feed_reaching_a_task_takes_the_episodes_being_made_ahead_for_it(tmp_path, tasks, monkeypatch):
    pool = _pool(monkeypatch)
    first, second, _ = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    source.store_ahead([(first, first.indices), (second, second.indices)])
    list(source.episodes(first, first.indices))
    pool.wait_for_held(2)  # two of the second task's episodes being made ahead
    running = {args[1] for _, _, args, _ in pool.held}
    got: list = []
    feeder = threading.Thread(target=lambda: got.extend(source.episodes(second, second.indices)))
    feeder.start()
    deadline = time.monotonic() + 30
    while episode_key(second) not in source._fed:  # the feed has reached the task
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)
    assert feeder.is_alive()  # it waits for the jobs running for it
    assert not [m for m in pool.made if m[0] == second.config.builder_config and not m[2]]
    while feeder.is_alive() and time.monotonic() < deadline:
        pool.release()
        feeder.join(0.05)
    assert not feeder.is_alive()
    assert [index for index, _, _ in got] == second.indices
    mine = [(index, ahead) for name, index, ahead in pool.made if name == second.config.builder_config]
    assert {index for index, ahead in mine if ahead} == running  # stored, then read back by the feed
    assert sorted(index for index, _ in mine) == second.indices  # the rest made by the feed; none twice
    source.close()
    store.close()


def test_jobs_made_ahead_wait_for_the_workers_that_jobs_someone_waits_for_hold(tmp_path, tasks, monkeypatch):
    pool = _pool(monkeypatch, hold_all=True)
    first, second, _ = tasks
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    for index in first.indices[1:3]:  # the feed's: both workers busy
        source._submit(first, index, None, None)
    source._feed_started.set()
    source.store_ahead([(first, first.indices), (second, second.indices)])
    time.sleep(0.3)
    assert len(pool.held) == 2  # nothing made ahead yet
    pool.release()
    pool.wait_for_held(1)
    assert all(kwargs.get("return_episode") is False for _, _, _, kwargs in pool.held)
    _released_until_stored(pool, store, second)
    source.close()
    store.close()


def test_a_task_whose_episode_fails_ahead_is_left_to_the_feed(tmp_path, tasks, monkeypatch):
    first, second, third = tasks
    pool = _pool(monkeypatch, failing=second.config.builder_config)
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    source = EpisodeSource(store, workers=2)
    source.store_ahead([(t, t.indices) for t in tasks])
    next(source.episodes(first, first.indices))
    _released_until_stored(pool, store, third)
    deadline = time.monotonic() + 30
    while any(t.name == "audioeval-store-ahead" for t in threading.enumerate()):  # until it has done all
        assert time.monotonic() < deadline
        pool.release()
        time.sleep(0.01)
    failed = [m for m in pool.made if m[0] == second.config.builder_config and m[2]]
    assert 1 <= len(failed) <= 2  # the jobs running when the first failed, no more, and no second try
    assert store.stored_indices(episode_key(second), second.indices) == set()
    source.close()
    store.close()


def test_nothing_is_made_ahead_without_a_store_that_keeps_episodes_or_without_workers(
    tmp_path, tasks, monkeypatch
):
    pool = _pool(monkeypatch)
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    capped = EpisodeStore(tmp_path / "capped.sqlite", cap_bytes=0)
    for source in (EpisodeSource(None, workers=2), EpisodeSource(store, workers=0), EpisodeSource(capped, 2)):
        source._feed_started.set()
        source.store_ahead([(t, t.indices) for t in tasks])
        assert source._busy == 0  # no thread started
        source.close()
    assert pool.made == [] and pool.held == []
    store.close()
    capped.close()


def test_a_run_against_an_endpoint_makes_its_later_tasks_episodes_ahead_a_local_model_does_not(
    tmp_path, monkeypatch
):
    """An endpoint sets the pace: episodes made ahead keep it busy. A model answering in the run's own process
    sets it itself, and reading episodes back from the store would only add to its work (the Quick start's
    `dsp-oracle` ran 5-10% slower)."""
    from audioeval.run.conductor import run_evaluation
    from audioeval.run.settings import RunConfig
    from audioeval.testing.fake_openai import FakeOpenAIServer

    asked: list[list[str]] = []
    monkeypatch.setattr(
        EpisodeSource,
        "store_ahead",
        lambda self, work: asked.append([t.name for t, indices in work if indices]),
    )
    tasks = "audioicl_audio_remap,audioicl_morse_code"
    common = dict(tasks=tasks, limit="2", num_fewshot=[0], bootstrap_resamples=20, show_progress=False)
    run_evaluation(RunConfig(model="chance", cache_dir=str(tmp_path / "local"), **common))
    assert asked == []
    with FakeOpenAIServer(reply=lambda body: "A") as server:
        args = {"model": "m", "base_url": server.base_url, "max_retries": 1}
        run_evaluation(RunConfig(model="openai", model_args=args, cache_dir=str(tmp_path / "api"), **common))
    assert asked == [["audioicl_audio_remap", "audioicl_morse_code"]]
