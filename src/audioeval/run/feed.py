"""The run's episodes, task after task, rendered into requests on a background thread and handed to the event
loop in order through a bounded queue (at most `ahead` episodes wait there). The episodes come from the
`EpisodeSource` (synthesis.py: the episode store, or worker processes ahead of this thread); rendering is
done here, so the event loop only sends, serves and scores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from audioeval.run.prepared import PreparedTask
from audioeval.run.synthesis import EpisodeSource
from audioeval.types import Request

_END = object()


@dataclass
class Rendered:
    """One episode's (request, target) pairs, one per shot count, of the run's `position`-th task."""

    position: int
    pairs: list[tuple[Request, str]]


@dataclass
class TaskDone:
    """Every episode of the run's `position`-th task was handed over; `synthesis_s` and `synthesized` say what
    making them cost (nothing for episodes read from the store)."""

    position: int
    synthesis_s: float
    synthesized: int


@dataclass
class FeedFailed:
    error: BaseException
    task: str  # the task whose episode failed


class RunFeed:
    def __init__(
        self,
        work: list[tuple[PreparedTask, list[int]]],
        source: EpisodeSource,
        ahead: int,
        when_fed: Callable[[], Any] | None = None,
    ) -> None:
        self.work = work  # (task, this process's indices) in the run's order
        self.source = source
        self.ahead = max(1, ahead)
        # run on this thread once every episode is handed over (the run's last answers are still to come)
        self.when_fed = when_fed
        self._slots = threading.Semaphore(self.ahead)
        self._stop = threading.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.failed_task: str | None = None  # the task whose episode could not be made

    async def __aiter__(self) -> AsyncIterator[Rendered | TaskDone]:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._produce, name="audioeval-feed", daemon=True)
        self._thread.start()
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, Rendered):
                    self._slots.release()
                if item is _END:
                    return
                if isinstance(item, FeedFailed):
                    self.failed_task = item.task
                    raise item.error
                yield item
        finally:
            self.stop()

    def _produce(self) -> None:
        task_name = ""
        try:
            for position, (task, indices) in enumerate(self.work):
                task_name = task.name
                spent, made = 0.0, 0
                for _index, episode, seconds in self.source.episodes(task, indices):
                    if seconds is not None:
                        spent, made = spent + seconds, made + 1
                    self._slots.acquire()
                    if self._stop.is_set():
                        return
                    self._put(Rendered(position, task.requests_for(episode)))
                self._put(TaskDone(position, spent, made))
            # read before the end is handed over: the loop then stops the feed itself
            stopped = self._stop.is_set()
            self._put(_END)
        except BaseException as err:  # noqa: BLE001 - handed to the loop, which raises it
            self._put(FeedFailed(err, task_name))
            return
        if self.when_fed is not None and not stopped:
            self.when_fed()

    def _put(self, item: Any) -> None:
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop has closed: the run was interrupted
            self._stop.set()

    def stop(self) -> None:
        """Let the thread finish the episode in hand and exit (the run is over or interrupted)."""
        self._stop.set()
        self._slots.release(self.ahead + 1)
