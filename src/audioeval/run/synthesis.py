"""Where a run's episodes come from: the episode store when they were synthesized before (by any run, for any
model), else synthesized in worker processes, as many as the machine has cores, ahead of the endpoint.

`EpisodeSource.episodes(task, indices)` yields the episodes in the order asked, whatever the number of workers
(each is a pure function of its configuration, seed and index, so results do not depend on it): the stored
ones at once, the others as jobs submitted a few ahead to the workers, each stored as it comes back. A worker
rebuilds the task's builder from a `Recipe` (the builder's name, config and arguments, the robustness
condition), once per process, and also compresses the new episode's audio for the store, so the run's own
process only renders and sends. `AUDIOEVAL_SYNTHESIS_WORKERS` sets the number of workers (0: synthesize on
the run's feed thread; default: the cores this process may use, shared among the processes of a launch).

With an episode store, the workers the feed leaves idle make the later tasks' episodes into the store ahead
of it (`store_ahead`): a task whose episodes are slower to make than the endpoint answers them no longer
starves the endpoint when the feed reaches it.

Episodes of another seed (what a reference model studies before answering, e.g. a baseline's probe episodes)
come the same way: `prefetch` synthesizes and stores them ahead on a thread of its own with a progress line,
and `episodes(task, indices, seed)` then reads them from the store.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_for_jobs
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from audioeval.augment.episode import augment_episode
from audioeval.augment.plan import Condition
from audioeval.data.builders import EpisodeBuilder, make_builder
from audioeval.run.episode_store import EncodedEpisode, EpisodeStore, encode_episode, episode_key
from audioeval.run.timing import SYNTHESIS_CPU
from audioeval.run.worker_processes import synthesis_workers, worker_pool

if TYPE_CHECKING:
    from audioeval.run.prepared import PreparedTask

log = logging.getLogger("audioeval")

STORE_EVERY = 16  # synthesized episodes written to the store in one transaction


@dataclass(frozen=True)
class Recipe:
    """What a worker process needs to make a task's episodes: its builder, made again there, and its condition."""

    builder: str
    config_name: str | None
    kwargs: tuple[tuple[str, Any], ...]
    base_dir: str
    source: str
    augment: Condition | None
    cache_root: str | None  # $AUDIOEVAL_CACHE of the run (synthesized speech, dataset locks)

    @classmethod
    def of(cls, task: PreparedTask, seed: int | None = None) -> Recipe:
        config = task.config
        kwargs = dict(config.builder_kwargs)
        if seed is not None:
            kwargs["seed"] = seed
        return cls(
            config.builder,
            config.builder_config,
            tuple(sorted(kwargs.items())),
            str(config.dir_of("builder")),
            str(config.path),
            task.augment,
            os.environ.get("AUDIOEVAL_CACHE"),
        )

    def builder_now(self) -> EpisodeBuilder:
        from pathlib import Path

        return make_builder(
            self.builder, self.config_name, dict(self.kwargs), Path(self.base_dir), self.source
        )


@dataclass
class Made:
    """One synthesized episode, its encoding for the store (None: not storable) and the seconds it took."""

    episode: dict[str, Any]
    encoded: EncodedEpisode | None
    seconds: float


_BUILDERS: OrderedDict[Recipe, EpisodeBuilder] = OrderedDict()  # per process: the builders made lately
_BUILDERS_LOCK = threading.Lock()


def _builder(recipe: Recipe) -> EpisodeBuilder:
    with _BUILDERS_LOCK:
        builder = _BUILDERS.get(recipe)
        if builder is not None:
            _BUILDERS.move_to_end(recipe)
            return builder
    builder = recipe.builder_now()
    with _BUILDERS_LOCK:
        _BUILDERS[recipe] = builder
        while len(_BUILDERS) > 16:
            _BUILDERS.popitem(last=False)
    return builder


def make_episode(
    recipe: Recipe, index: int, encode: bool, audio: bool = True, return_episode: bool = True
) -> Made:
    """In a worker process (or the feed thread): one episode, and its encoding for the store. Without `audio`
    the episode is only stored, without its audio (a study's episodes): nothing else is sent back. Without
    `return_episode` only its encoding is sent back (an episode made ahead, for the store)."""
    if recipe.cache_root is not None and os.environ.get("AUDIOEVAL_CACHE") != recipe.cache_root:
        os.environ["AUDIOEVAL_CACHE"] = recipe.cache_root
    started = time.perf_counter()
    builder = _builder(recipe)
    episode = builder.episode(index)
    if recipe.augment is not None:
        episode = augment_episode(episode, recipe.augment, builder)
    seconds = time.perf_counter() - started
    if not audio:
        return Made({}, encode_episode(episode, audio=False) if encode else None, seconds)
    return Made(episode if return_episode else {}, encode_episode(episode) if encode else None, seconds)


class FirstEpisodes:
    """Episode 0 of each task, made by the worker processes while the run gets ready: preflight renders them
    (`take`), and the run then sends them first. Submitted from a thread of its own, since the first job waits
    for the forkserver's imports. A task whose episode the workers could not make (no workers, a worker that
    died, the builder's own error) gets None: preflight makes it in this process, which raises the error there
    as it always did. `storable`: the tasks whose episodes go to the episode store (their encoding is made with
    them)."""

    def __init__(self, tasks: list[PreparedTask], storable: set[str]) -> None:
        self._jobs: dict[str, Future[Made]] = {}
        self._submitted = threading.Event()
        self._cancelled = threading.Event()
        workers = synthesis_workers()
        if workers <= 0 or not tasks:
            self._submitted.set()
            return
        threading.Thread(
            target=self._submit, args=(tasks, workers, storable), name="audioeval-first-episodes", daemon=True
        ).start()

    def _submit(self, tasks: list[PreparedTask], workers: int, storable: set[str]) -> None:
        try:
            for task in tasks:
                if self._cancelled.is_set():
                    return
                job = worker_pool(workers).submit(
                    make_episode, Recipe.of(task), task.indices[0], task.name in storable
                )
                self._jobs[task.name] = job
        except Exception as err:  # noqa: BLE001 - the episodes are made in this process instead
            log.debug("first episodes: the workers could not be asked (%s)", err)
        finally:
            self._submitted.set()

    def take(self, task: PreparedTask) -> Made | None:
        self._submitted.wait()
        job = self._jobs.pop(task.name, None)
        if job is None:
            return None
        try:
            return job.result()
        except Exception:  # noqa: BLE001 - made again in this process, where its error is raised as before
            return None

    def cancel(self) -> None:
        """Planning failed: no more jobs, and those not started yet are dropped (the run's end stops the rest)."""
        self._cancelled.set()
        self._submitted.wait()
        for job in self._jobs.values():
            job.cancel()
        self._jobs.clear()


class SourceStopped(Exception):
    """The run is over or stopping: no more episodes are made."""


class EpisodeSource:
    def __init__(self, store: EpisodeStore | None, workers: int | None = None) -> None:
        self.store = store if store is not None and store.usable else None
        self.workers = synthesis_workers() if workers is None else workers
        # the feed thread and the prefetch threads add to these: under `_counting`
        self.synthesis_s = 0.0  # seconds of synthesis, in the workers or here
        self.synthesized = 0  # episodes synthesized (not read from the store)
        self._counting = threading.Lock()
        self._prefetched: dict[str, threading.Event] = {}  # episode key -> set once its prefetch is over
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        # threads making, reading or storing episodes (`episodes`, `store_ahead`): under `_idle`
        self._busy = 0
        self._idle = threading.Condition()
        # the workers' jobs that someone waits for (the feed's, a study's) and not done yet: the jobs made
        # ahead (`store_ahead`) take only the workers these leave idle
        self._urgent = 0
        self._workers_free = threading.Condition()
        self._feed_started = threading.Event()  # the feed has asked for its first episodes
        self._fed: set[str] = set()  # episode keys whose episodes the feed has started to read: under `_lock`
        # episodes made ahead and not read yet: (key, index) -> (seconds, bytes stored); under `_lock`
        self._made_ahead: dict[tuple[str, int], tuple[float, int]] = {}
        self._unread_bytes = 0  # their bytes: under `_lock`
        self._ahead_key: str | None = None  # the key whose episodes are being made ahead: under `_lock`
        self._ahead_left = threading.Condition(self._lock)  # notified when `_ahead_key` changes

    # ------------------------------------------------------------------------------------------------------
    def episodes(
        self,
        task: PreparedTask,
        indices: list[int],
        seed: int | None = None,
        ahead: int | None = None,
        wait: bool = True,
        audio: bool = True,
    ) -> Iterator[tuple[int, dict[str, Any], float | None]]:
        """(index, episode, seconds of synthesis or None when read from the store) in the order of `indices`:
        stored ones read back, others synthesized and stored. With `wait`, episodes being prefetched are read
        once the prefetch is over. Without `audio` (a prefetch) synthesized episodes are stored without their
        audio and yielded empty."""
        self._work_started()
        try:
            yield from self._episodes(task, indices, seed, ahead, wait, audio)
        finally:
            self._work_ended()

    def _work_started(self) -> None:
        """A thread starts making, reading or storing episodes: `close` waits until it ends."""
        with self._idle:
            self._busy += 1

    def _work_ended(self) -> None:
        with self._idle:
            self._busy -= 1
            self._idle.notify_all()

    def _episodes(
        self,
        task: PreparedTask,
        indices: list[int],
        seed: int | None,
        ahead: int | None,
        wait: bool,
        audio: bool,
    ) -> Iterator[tuple[int, dict[str, Any], float | None]]:
        key = episode_key(task, seed) if self.store is not None else None
        if key is not None and seed is not None and wait:
            self._wait_for_prefetch(key)
        if key is not None and seed is None:
            # the thread making episodes ahead leaves this task now; the jobs it has running for it are stored
            # before the store is read
            with self._lock:
                self._fed.add(key)
                while self._ahead_key == key and not self._stopped.is_set():
                    self._ahead_left.wait(0.1)
        remake = self._remaker(task, seed)
        pending: deque[tuple[int, Any]] = deque()  # (index, episode | Future[Made] | None)
        ahead = ahead or 2 * max(1, self.workers) + 2
        to_store: dict[int, EncodedEpisode] = {}
        chunks = iter([indices[i : i + 64] for i in range(0, len(indices), 64)])
        stored: dict[int, dict[str, Any]] = {}
        queued: deque[int] = deque()
        try:
            while True:
                if self._stopped.is_set():
                    raise SourceStopped("the run stopped while its episodes were being made")
                while len(pending) < ahead:
                    if not queued:
                        chunk = next(chunks, None)
                        if chunk is None:
                            break
                        stored = self.store.get_many(key, chunk, remake) if self.store and key else {}
                        queued.extend(chunk)
                    index = queued.popleft()
                    pending.append(
                        (index, stored.pop(index, None) or self._submit(task, index, seed, key, audio))
                    )
                if seed is None:
                    self._feed_started.set()  # its first jobs are in: those made ahead may follow
                if not pending:
                    break
                index, item = pending.popleft()
                if isinstance(item, dict):
                    yield index, item, self._seconds_ahead(key, index)
                    continue
                made = self._result(item, task, index, seed, key, audio)
                if made.encoded is not None and key is not None:
                    to_store[index] = made.encoded
                    if len(to_store) >= STORE_EVERY:
                        self._store(key, to_store)
                yield index, made.episode, made.seconds
        finally:
            for _, item in pending:
                if isinstance(item, Future):
                    item.cancel()
            if key is not None and to_store:
                self._store(key, to_store)

    def prefetch(self, task: PreparedTask, seed: int, count: int, progress: Callable[[int], Any]) -> None:
        """Make sure episodes 0..count-1 of the task under `seed` are in the store (a study's episodes)."""
        key = episode_key(task, seed) if self.store is not None else None
        if key is None:
            progress(count)
            return
        with self._lock:
            done = self._prefetched.setdefault(key, threading.Event())
        try:
            # one job per worker: the run's own episodes, a few more ahead, mostly go first, and whenever they
            # are not wanted (the pipeline waits for these studies) every worker makes these
            ahead = max(1, self.workers)
            for _ in self.episodes(task, list(range(count)), seed, ahead=ahead, wait=False, audio=False):
                progress(1)
        finally:
            done.set()

    def _wait_for_prefetch(self, key: str) -> None:
        with self._lock:
            done = self._prefetched.get(key)
        while done is not None and not done.wait(0.5) and not self._stopped.is_set():
            pass

    def warm_up(self, tasks: list[PreparedTask]) -> None:
        """Start the worker processes now (while the run gets ready) if the first task's first episodes are
        not stored: starting them takes seconds that would otherwise come before the first request."""
        first = next((t for t in tasks if isinstance(t.builder, EpisodeBuilder) and t.indices), None)
        if first is None or self.workers <= 0:
            return
        key = episode_key(first) if self.store is not None else None
        if self.store is not None and key is not None and self.store.get_many(key, first.indices[1:3]):
            return
        worker_pool(self.workers).submit(int, 0)  # a job that makes the pool start its processes

    # ---- the later tasks' episodes, made ahead ---------------------------------------------------------
    def store_ahead(self, work: list[tuple[PreparedTask, list[int]]]) -> None:
        """Make the episodes of the tasks after the first into the episode store, with the workers the feed and
        the studies leave idle (one job per worker at most): a few of each task in the run's order, then the
        slowest to make first. The feed reads them from the store when it gets there, so a task whose episodes
        take longer to make than the endpoint takes to answer them (AnomalyDetect: 0.3 s of CPU each) no longer
        starves the endpoint as much: its episodes were made while the tasks before it were being answered. A
        task the feed has started is left to it. Nothing happens without a store or workers; whatever is not
        made ahead the feed makes as before."""
        fed = [(t, i) for t, i in work if i]
        later = [(t, i) for t, i in fed[1:] if isinstance(t.builder, EpisodeBuilder)]
        if self.store is None or self.store.cap_bytes <= 0 or self.workers <= 0 or not later:
            return  # (a store capped at 0 keeps nothing)
        self._work_started()  # ended by the thread
        threading.Thread(
            target=self._store_ahead, args=(later,), name="audioeval-store-ahead", daemon=True
        ).start()

    def _store_ahead(self, later: list[tuple[PreparedTask, list[int]]]) -> None:
        try:
            while not self._feed_started.wait(0.1):  # the feed's own first jobs go first
                if self._stopped.is_set():
                    return
            plans = [
                (task, indices, key) for task, indices in later if (key := episode_key(task)) is not None
            ]
            seconds: dict[str, float] = {}  # key -> what its episodes made ahead took, the fastest
            failed: set[str] = set()  # keys of the tasks left to the feed after an episode failed
            # a few episodes of each task first, in the run's order: what the fastest took (the first made in
            # a worker also builds the task's builder there) orders the rest
            for task, indices, key in plans:
                if not self._store_task_ahead(task, indices, key, seconds, failed, most=self.workers + 1):
                    return
            # then the slowest to make first: the feed's own jobs make a cheap task's episodes in time
            for task, indices, key in sorted(plans, key=lambda plan: -seconds.get(plan[2], 0.0)):
                if key not in failed and not self._store_task_ahead(task, indices, key, seconds, failed):
                    return
        except Exception as err:  # noqa: BLE001 - the feed makes what is missing itself, and says what fails
            log.debug("episodes made ahead: stopped (%s)", err)
        finally:
            self._work_ended()

    def _store_task_ahead(
        self,
        task: PreparedTask,
        indices: list[int],
        key: str,
        seconds: dict[str, float],
        failed: set[str],
        most: int | None = None,
    ) -> bool:
        """The task's missing episodes (the first `most` of them), made ahead and stored, unless the feed has
        started the task or one of them fails (the task's key goes to `failed`: the feed makes that episode,
        and raises its error); `seconds[key]` notes the fastest. False: no more episodes are made ahead (the
        run stops, or the store is lost)."""
        assert self.store is not None
        made_first = task.preflight_episode[0] if task.preflight_episode is not None else None
        wanted = [i for i in indices if i != made_first]
        stored = self.store.stored_indices(key, wanted)
        missing = [i for i in wanted if i not in stored][:most]
        recipe = Recipe.of(task)
        jobs: dict[int, Future[Made]] = {}
        with self._lock:
            if key in self._fed:
                return True
            self._ahead_key = key
        try:
            try:
                for index in missing:
                    while True:  # until a worker is free for it, checking the run and the feed meanwhile
                        if self._stopped.is_set() or not self.store.usable:
                            return False
                        if self._fed_now(key) or not self._keep_made(task, key, jobs, seconds, failed):
                            return True
                        if self._room_for_job(jobs):
                            break
                    job = worker_pool(self.workers).submit(
                        make_episode, recipe, index, encode=True, audio=True, return_episode=False
                    )
                    job.add_done_callback(self._ahead_done)
                    jobs[index] = job
                while jobs and not self._stopped.is_set() and not self._fed_now(key):
                    if not self._keep_made(task, key, jobs, seconds, failed, wait_s=0.2):
                        return True
                return not self._stopped.is_set() and self.store.usable
            finally:
                # the feed may be waiting for this task: the jobs not started are dropped, those running kept
                for job in jobs.values():
                    job.cancel()
                if not self._stopped.is_set():
                    wait_for_jobs([j for j in jobs.values() if not j.cancelled()], timeout=60)
                    self._keep_made(task, key, jobs, seconds, failed)
        finally:
            with self._lock:
                self._ahead_key = None
                self._ahead_left.notify_all()

    def _ahead_done(self, _job: Future[Made]) -> None:
        with self._workers_free:
            self._workers_free.notify_all()

    def _room_for_job(self, jobs: dict[int, Future[Made]]) -> bool:
        """Whether a job may be made ahead now (else waits a little): a worker is idle, and what was made ahead
        and not read yet holds under a quarter of the store's cap (past it, eviction would drop episodes made
        ahead before the feed reads them)."""
        assert self.store is not None
        with self._lock:
            unread = self._unread_bytes
        with self._workers_free:
            busy = self._urgent + sum(1 for job in jobs.values() if not job.done())
            if busy < self.workers and unread <= self.store.cap_bytes // 4:
                return True
            self._workers_free.wait(0.05)
            return False

    def _fed_now(self, key: str) -> bool:
        with self._lock:
            return key in self._fed

    def _keep_made(
        self,
        task: PreparedTask,
        key: str,
        jobs: dict[int, Future[Made]],
        seconds: dict[str, float],
        failed: set[str],
        wait_s: float = 0.0,
    ) -> bool:
        """Store the finished jobs' episodes at once, where the feed finds them. False when one failed (its
        key goes to `failed`): the task is left to the feed, which makes it again and raises its error."""
        if wait_s and jobs:
            wait_for_jobs(list(jobs.values()), timeout=wait_s, return_when=FIRST_COMPLETED)
        to_store: dict[int, EncodedEpisode] = {}
        made_s: dict[int, float] = {}
        for index in [i for i, job in jobs.items() if job.done()]:
            job = jobs.pop(index)
            if job.cancelled():
                continue
            try:
                made = job.result()
            except BaseException as err:  # noqa: BLE001 - the feed makes it again and raises its error there
                log.debug("episode %d of %s made ahead failed (%s): left to the run", index, task.name, err)
                failed.add(key)
                continue
            seconds[key] = min(seconds.get(key, made.seconds), made.seconds)
            if made.encoded is not None:
                to_store[index], made_s[index] = made.encoded, made.seconds
        if to_store:
            sizes = {i: len(e.body) + sum(len(b) for b in e.blobs.values()) for i, e in to_store.items()}
            self._store(key, to_store)
            with self._lock:
                for index, size in sizes.items():
                    self._made_ahead[(key, index)] = (made_s[index], size)
                    self._unread_bytes += size
        return key not in failed

    def _seconds_ahead(self, key: str | None, index: int) -> float | None:
        """The seconds an episode read from the store took when it was made ahead in this run (None: made
        by an earlier run); counted in the run's synthesis once it is read."""
        if key is None:
            return None
        with self._lock:
            made = self._made_ahead.pop((key, index), None)
            if made is None:
                return None
            self._unread_bytes -= made[1]
        with self._counting:
            self.synthesis_s += made[0]
            self.synthesized += 1
        return made[0]

    def stop(self) -> None:
        """The run is over or stopping: nobody waits for a prefetch any more."""
        self._stopped.set()

    def close(self, timeout: float = 30.0) -> None:
        """The run is over: stop, and wait until no thread is making, reading or storing episodes (the feed's
        last episode, a study's prefetch), so that the episode store closes under none of them: closing its
        connection under a write crashed the process."""
        self.stop()
        with self._idle:
            if not self._idle.wait_for(lambda: self._busy == 0, timeout):
                log.debug("episode source: %d threads still at work after %.0f s", self._busy, timeout)

    # ------------------------------------------------------------------------------------------------------
    def _submit(
        self, task: PreparedTask, index: int, seed: int | None, key: str | None, audio: bool = True
    ) -> Future[Made] | None:
        if self.workers <= 0 or not isinstance(task.builder, EpisodeBuilder):
            return None  # made on this thread when its turn comes
        if seed is None and task.preflight_episode is not None and task.preflight_episode[0] == index:
            return None  # preflight made it before the run: taken on this thread, not made again
        recipe = Recipe.of(task, seed)
        job = worker_pool(self.workers).submit(make_episode, recipe, index, key is not None, audio)
        with self._workers_free:
            self._urgent += 1
        job.add_done_callback(self._urgent_done)  # (at once when the job is done already)
        return job

    def _urgent_done(self, _job: Future[Made]) -> None:
        with self._workers_free:
            self._urgent -= 1
            self._workers_free.notify_all()

    def _result(
        self,
        item: Future[Made] | None,
        task: PreparedTask,
        index: int,
        seed: int | None,
        key: str | None,
        audio: bool = True,
    ) -> Made:
        made = None
        if item is not None:
            try:
                made = item.result()
            except BrokenProcessPool:
                log.warning(
                    "a synthesis worker process died: episode %d of %s is made here", index, task.name
                )
        if made is None:
            made = self._here(task, index, seed, key is not None, audio)
        seconds = made.seconds
        with self._counting:
            self.synthesis_s += seconds
            self.synthesized += 1
        return made

    def _here(
        self, task: PreparedTask, index: int, seed: int | None, encode: bool, audio: bool = True
    ) -> Made:
        """An episode made on this process (no worker, or a worker died); its CPU is counted apart."""
        cpu = time.thread_time()
        try:
            return self._make_here(task, index, seed, encode, audio)
        finally:
            SYNTHESIS_CPU.add(time.thread_time() - cpu)

    def _make_here(
        self, task: PreparedTask, index: int, seed: int | None, encode: bool, audio: bool = True
    ) -> Made:
        if seed is None and task.preflight_episode is not None and task.preflight_episode[0] == index:
            episode = task.preflight_episode[1]  # made for preflight before the run: not made twice
            encoded = task.preflight_encoded  # made by a worker with the episode, else encoded here
            task.preflight_episode = task.preflight_encoded = None
            if encode and encoded is None:
                encoded = encode_episode(episode)
            return Made(episode, encoded if encode else None, 0.0)
        if seed is None and not isinstance(task.builder, EpisodeBuilder):
            started = time.perf_counter()
            episode = task.episode(index)  # stored data (`dataset=`): read, not synthesized
            return Made(episode, None, time.perf_counter() - started)
        if seed is None:
            started = time.perf_counter()
            episode = task.episode(index)
            seconds = time.perf_counter() - started
            return Made(episode, encode_episode(episode) if encode else None, seconds)
        return make_episode(Recipe.of(task, seed), index, encode, audio)

    def _remaker(self, task: PreparedTask, seed: int | None) -> Callable[[int], dict[str, Any]]:
        return lambda index: self._here(task, index, seed, False).episode

    def _store(self, key: str, episodes: dict[int, EncodedEpisode]) -> None:
        if self.store is not None:
            self.store.put_many(key, dict(episodes))
        episodes.clear()
