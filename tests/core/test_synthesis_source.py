"""Where a run's episodes come from (`EpisodeSource`): each episode is made once, whatever the number of
synthesis workers, and the counters stay right when several threads make episodes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import Future

import pytest

import audioeval
from audioeval.config.registry import TaskRegistry
from audioeval.errors import UsageError
from audioeval.models.baselines.chance import ChanceModel
from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.models.realtime import RealtimeModel
from audioeval.run import planning, synthesis, worker_processes
from audioeval.run.conductor import run_evaluation
from audioeval.run.episode_store import clips_in_order
from audioeval.run.planning import plan_run
from audioeval.run.prepared import preflight, prepare_tasks
from audioeval.run.settings import RunConfig
from audioeval.run.synthesis import EpisodeSource
from tests.conftest import TOY


class InlinePool:
    """A worker pool that runs each job on the calling thread and notes what it was given."""

    def __init__(self) -> None:
        self.jobs: list[int] = []

    def submit(self, fn, *args, **kwargs):
        if fn is synthesis.make_episode:
            self.jobs.append(args[1])
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@pytest.fixture
def toy_task(monkeypatch):
    registry = TaskRegistry.discover([TOY])
    (task,) = prepare_tasks(registry, ["toy_tones"], num_fewshot=[0, 1], task_args={}, limit="4", seed=0,
                            gen_kwargs={})  # fmt: skip
    made: Counter[int] = Counter()
    episode = task.builder.episode

    def counted(index: int) -> dict:
        made[index] += 1
        return episode(index)

    monkeypatch.setattr(task.builder, "episode", counted)
    monkeypatch.setattr(synthesis, "_builder", lambda recipe: task.builder)  # the workers' builder too
    return task, made


def test_with_workers_the_episode_preflight_made_is_not_made_again(toy_task, monkeypatch):
    task, made = toy_task
    pool = InlinePool()
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: pool)
    preflight([task], ChanceModel)
    assert made == {0: 1}
    source = EpisodeSource(None, workers=2)
    episodes = {index: episode for index, episode, _ in source.episodes(task, task.indices)}
    assert sorted(episodes) == task.indices
    assert made == {0: 1, 1: 1, 2: 1, 3: 1}  # episode 0 once, by preflight
    assert 0 not in pool.jobs and sorted(pool.jobs) == [1, 2, 3]
    assert source.synthesized == 4


class SlowMade(synthesis.Made):
    """An episode whose synthesis time takes a moment to read: threads adding it up interleave."""

    @property
    def seconds(self) -> float:
        time.sleep(0.002)
        return 0.5

    @seconds.setter
    def seconds(self, value: float) -> None:
        pass


def test_the_synthesis_counters_add_up_when_several_threads_make_episodes(toy_task):
    task, _ = toy_task
    source = EpisodeSource(None, workers=2)
    threads, per_thread = 8, 10

    def feed() -> None:
        for index in range(per_thread):
            future: Future = Future()
            future.set_result(SlowMade({}, None, 0.5))
            source._result(future, task, index, 1, None)

    workers = [threading.Thread(target=feed) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert source.synthesized == threads * per_thread
    assert source.synthesis_s == 0.5 * threads * per_thread


def test_a_cold_runs_first_episodes_are_made_by_the_workers_while_planning(tmp_path, monkeypatch):
    """The first episode of each task not stored is made by the synthesis workers while planning runs its other
    checks; preflight renders what they made, with their encoding for the store. A rerun whose episodes are
    stored asks them for none."""
    pool = InlinePool()
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: pool)
    monkeypatch.setattr(synthesis, "synthesis_workers", lambda: 2)
    cfg = RunConfig(tasks="audioicl_audio_remap", model="chance", limit="3", num_fewshot=[0, 1],
                    cache_dir=str(tmp_path / "cache"), bootstrap_resamples=20, show_progress=False)  # fmt: skip
    task = plan_run(cfg).tasks[0]
    assert pool.jobs == [task.indices[0]]
    assert task.preflight_episode is not None and task.preflight_encoded is not None
    run_evaluation(cfg)  # stores the episodes
    pool.jobs.clear()
    task = plan_run(cfg).tasks[0]
    assert pool.jobs == [] and task.preflight_episode is not None


def test_a_first_episode_the_workers_could_not_make_is_made_by_preflight_itself(tmp_path, monkeypatch):
    class BrokenPool:
        def submit(self, fn, *args):
            future: Future = Future()
            future.set_exception(RuntimeError("a worker died"))
            return future

    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: BrokenPool())
    monkeypatch.setattr(synthesis, "synthesis_workers", lambda: 2)
    cfg = RunConfig(tasks="audioicl_audio_remap", model="chance", limit="3", num_fewshot=[0, 1],
                    cache_dir=str(tmp_path / "cache"), bootstrap_resamples=20, show_progress=False)  # fmt: skip
    task = plan_run(cfg).tasks[0]
    assert task.preflight_episode is not None and task.preflight_encoded is None
    made_here, again = task.preflight_episode[1], task.episode(task.indices[0])
    assert [c.sha256 for c in clips_in_order(made_here)] == [c.sha256 for c in clips_in_order(again)]


def test_a_planning_failure_drops_the_first_episodes_not_started(tmp_path, monkeypatch):
    """A check that fails after the workers were asked for the first episodes leaves no job waiting for them."""

    class PendingPool:
        def __init__(self) -> None:
            self.futures: list[Future] = []

        def submit(self, fn, *args):
            self.futures.append(Future())
            return self.futures[-1]

    pool = PendingPool()
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: pool)
    monkeypatch.setattr(synthesis, "synthesis_workers", lambda: 2)

    def missing(pieces):
        raise UsageError("a package is missing")

    monkeypatch.setattr(planning, "check_installed", missing)
    cfg = RunConfig(tasks="audioicl_audio_remap,audioicl_morse_code", model="chance", limit="3",
                    cache_dir=str(tmp_path / "cache"), bootstrap_resamples=20, show_progress=False)  # fmt: skip
    with pytest.raises(UsageError, match="missing"):
        plan_run(cfg)
    assert len(pool.futures) == 2 and all(f.cancelled() for f in pool.futures)


def test_the_workers_server_starts_before_the_run_loads_only_without_an_episode_store(tmp_path, monkeypatch):
    """A call with no episode store yet starts the forkserver before the run's heavy modules load (once its
    flags are checked, while its names are: the server uses a core that is idle then, and ends with the process
    or serves the next call); a call on a cache that has one leaves that to the first job."""
    started: list[bool] = []
    monkeypatch.setattr(worker_processes, "start_forkserver", lambda: started.append(True))
    monkeypatch.setattr(synthesis, "worker_pool", lambda workers: InlinePool())
    args = dict(model="chance", limit=2, num_fewshot=[0], cache_dir=str(tmp_path / "cache"), no_progress=True)
    with pytest.raises(UsageError, match="--seed"):
        audioeval.evaluate(tasks=["audioicl_audio_remap"], seed=-1, **args)
    assert started == []
    with pytest.raises(Exception, match="no_such_task"):
        audioeval.evaluate(tasks=["no_such_task"], **args)
    assert started == [True]
    audioeval.evaluate(tasks=["audioicl_audio_remap"], **args)
    assert started == [True, True]
    audioeval.evaluate(tasks=["audioicl_audio_remap"], **args)
    assert started == [True, True]
    audioeval.evaluate(tasks=["audioicl_audio_remap"], no_cache=True, **{**args, "cache_dir": None})
    assert started == [True, True, True]


@pytest.mark.slow
def test_the_workers_server_imports_what_making_episodes_needs_not_the_task_layer():
    """The forkserver imports its PRELOAD before the first episodes can be made, on a core the run's own imports
    share: the task layer (task configs, templates, pydantic, Jinja: 0.1 s of CPU) is not among them, since a
    worker only rebuilds builders and makes episodes."""
    code = (
        "import importlib, sys\n"
        "from audioeval.run.worker_processes import PRELOAD\n"
        "for name in PRELOAD: importlib.import_module(name)\n"
        "print(sorted(set(sys.modules) & {'audioeval.run.prepared', 'audioeval.config.registry', 'jinja2', "
        "'pydantic'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_backends_slow_imports_are_done_while_planning_waits_for_the_first_episodes(tmp_path, monkeypatch):
    (tmp_path / "slow_sdk.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_sdk", raising=False)

    class Backend(ChanceModel):
        imports_ahead = ("no_such_sdk", "slow_sdk")

    thread = planning.import_ahead([Backend, ChanceModel])
    assert thread is not None
    thread.join(30)
    assert sys.modules["slow_sdk"].LOADED and "no_such_sdk" not in sys.modules
    assert planning.import_ahead([ChanceModel]) is None
    assert "openai" in OpenAIChatModel.imports_ahead and "openai" in RealtimeModel.imports_ahead
