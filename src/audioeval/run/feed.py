"""Episodes synthesized ahead on a background thread (synthesis is CPU work), rendered into requests, and
handed to the event loop in index order through a bounded queue: at most `ahead` episodes wait there.

Episodes given as `stored` (episode_store.py: every answer of theirs is cached) are handed on as they are,
without synthesis; each synthesized one is described in `described` for the store."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from audioeval.run.episode_store import describe_pairs
from audioeval.run.prepared import PreparedTask
from audioeval.types import Request

_END = object()


@dataclass
class _Failed:
    error: BaseException


class EpisodeFeed:
    def __init__(
        self,
        task: PreparedTask,
        indices: list[int],
        ahead: int,
        stored: dict[int, list[tuple[Request, str]]] | None = None,
        describe: bool = False,
    ) -> None:
        self.task = task
        self.indices = indices
        self.stored = stored or {}
        self.describe = describe
        self.described: dict[int, list[dict[str, Any]]] = {}  # synthesized episodes, as the store keeps them
        self.synthesis_s = 0.0  # synthesis and rendering time, on the feed's thread
        self.ahead = max(1, ahead)
        self._slots = threading.Semaphore(self.ahead)
        self._stop = threading.Event()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def __aiter__(self) -> AsyncIterator[list[tuple[Request, str]]]:
        """(request, target) pairs of one episode at a time, one per shot count."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._produce, name="audioeval-synthesis", daemon=True)
        self._thread.start()
        try:
            while True:
                item = await self._queue.get()
                self._slots.release()
                if item is _END:
                    return
                if isinstance(item, _Failed):
                    raise item.error
                yield item
        finally:
            self.stop()

    def _produce(self) -> None:
        try:
            for index in self.indices:
                self._slots.acquire()
                if self._stop.is_set():
                    return
                if index in self.stored:
                    self._put(self.stored[index])
                    continue
                started = time.perf_counter()
                pairs = self.task.requests_for(self.task.episode(index))
                self.synthesis_s += time.perf_counter() - started
                if self.describe and (records := describe_pairs(pairs)) is not None:
                    self.described[index] = records
                self._put(pairs)
            self._put(_END)
        except BaseException as err:  # noqa: BLE001 - handed to the loop, which raises it
            self._put(_Failed(err))

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
