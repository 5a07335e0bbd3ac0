"""The one serving path, for model requests and judge requests alike: answer from the response store when it
can, send a request identical to one already in flight only once, generate the rest, and store each response
the moment it arrives (so a run killed at any point resumes with only the missing requests).

How the rest is generated depends on the backend (models/base.py): a batch backend gets the requests of one
`submit` call sorted longest first, in chunks of its `request_chunk_size`, one chunk at a time on a worker
thread; a streaming backend gets every request at once and keeps its own bounded number in flight.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

from audioeval.models.base import Model, check_generated
from audioeval.run.cache import CacheEntry, EntryKind, ResponseStore
from audioeval.run.episode_store import audio_unread, read_audio
from audioeval.run.timing import GENERATE_CPU
from audioeval.types import Request, Response

AUDIO_THREADS = 2  # read and encode a streaming backend's audio (Server._reader)


def longest_first(request: Request) -> tuple[float, int]:
    """Sort key: a chunk then holds requests of similar length, and memory peaks early."""
    return (-request.audio_seconds, -sum(len(m.text) for m in request.messages))


class Server:
    def __init__(
        self, model: Model, store: ResponseStore, *, kind: EntryKind, identity: dict[str, Any] | None = None
    ) -> None:
        self.model = model
        self.store = store
        self.kind = kind
        self.identity = identity if identity is not None else model.identity
        self.stats = model.stats
        self.cache_hits = 0  # responses the store had from a previous run
        self._answered: set[str] = set()  # content keys answered by the backend in this run
        self._twins: dict[str, asyncio.Future[Response]] = {}  # content key -> the request in flight
        self._tasks: set[asyncio.Task[None]] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._audio: ThreadPoolExecutor | None = None  # reads a streaming backend's audio (_reader)

    # ------------------------------------------------------------------------------------------------------
    def submit(self, requests: list[Request]) -> list[asyncio.Future[Response]]:
        """One future per request, in order. Must be called from the event loop that awaits the futures."""
        loop = asyncio.get_running_loop()
        keys = [r.content_key(self.identity) for r in requests]
        hits = self.store.get_many([k for k in dict.fromkeys(keys) if k not in self._twins])
        futures: list[asyncio.Future[Response]] = []
        misses: list[tuple[str, Request, asyncio.Future[Response]]] = []
        for request, key in zip(requests, keys, strict=True):
            future: asyncio.Future[Response] = loop.create_future()
            twin = self._twins.get(key)
            if twin is not None:
                twin.add_done_callback(partial(_follow, mine=future))
            elif key in hits:
                # a hit on an answer of this run is a reuse, like a twin's, not a response of a previous run
                self.cache_hits += key not in self._answered
                hit = hits[key]
                future.set_result(Response(text=hit.text, cached=True, info=hit.info, spoken=hit.spoken))
            else:
                self._twins[key] = future
                misses.append((key, request, future))
            futures.append(future)
        if not misses:
            return futures
        if self.model.streams:
            for miss in misses:
                self._spawn(self._stream_one(*miss))
        else:
            self._spawn(self._batches(loop, misses))
        return futures

    async def generate(self, request: Request) -> Response:
        return await self.submit([request])[0]

    # ------------------------------------------------------------------------------------------------------
    async def _stream_one(self, key: str, request: Request, future: asyncio.Future[Response]) -> None:
        self.stats.requests += 1
        try:
            request = request.for_backend()
            if request.clips:  # clips read (from the episode store) and encoded off the event loop
                await asyncio.get_running_loop().run_in_executor(self._reader(), self._prepare, request)
            response = await self.model.generate_one(request)  # type: ignore[attr-defined]
            response = check_generated(self.model, [response], 1)[0]
        except BaseException as err:
            self._fail([(key, future)], err)
            if not isinstance(err, Exception):
                raise
            return
        self._deliver([(key, future, response)])

    def _reader(self) -> ThreadPoolExecutor:
        """Two threads for the requests' audio (decompressing and encoding, mostly outside the interpreter lock):
        a request with ten clips need not wait for all of them alone, and more threads would only take turns at
        the lock with the event loop and each other."""
        if self._audio is None:
            self._audio = ThreadPoolExecutor(
                max_workers=AUDIO_THREADS, thread_name_prefix=f"audioeval-{self.kind}-audio"
            )
        return self._audio

    def _prepare(self, request: Request) -> None:
        """On the reader thread: the request's stored clips read, then whatever the backend does before sending."""
        if audio_unread(request):
            read_audio(request)
        self.model.prepare_request(request)  # type: ignore[attr-defined]

    async def _batches(
        self, loop: asyncio.AbstractEventLoop, misses: list[tuple[str, Request, asyncio.Future[Response]]]
    ) -> None:
        misses = sorted(misses, key=lambda m: longest_first(m[1]))
        size = max(1, self.model.request_chunk_size)
        chunks = [misses[i : i + size] for i in range(0, len(misses), size)]
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"audioeval-{self.kind}")
        # queued together, so the worker runs this call's chunks back to back, in order
        running = [
            loop.run_in_executor(self._executor, self._run_batch, [r for _, r, _ in c]) for c in chunks
        ]
        for i, (chunk, work) in enumerate(zip(chunks, running, strict=True)):
            try:
                produced = await work
            except BaseException as err:
                for later in running[i + 1 :]:
                    later.cancel()
                self._fail([(k, f) for rest in chunks[i:] for k, _, f in rest], err)
                if not isinstance(err, Exception):
                    raise
                return
            self._deliver([(k, f, r) for (k, _, f), r in zip(chunk, produced, strict=True)])

    def _run_batch(self, requests: list[Request]) -> list[Response]:
        """On the worker thread: one generate() call, timed."""
        n = len(requests)
        self.stats.requests += n
        self.stats.enter(n)
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            produced = self.model.generate([r.for_backend() for r in requests])
        finally:
            self.stats.leave(n)
            GENERATE_CPU.add(time.thread_time() - cpu)
        elapsed = time.perf_counter() - started
        produced = check_generated(self.model, produced, n)
        for response in produced:
            self.stats.latency.add(elapsed)
            if not response.latency_s:
                response.latency_s = elapsed / n
        return produced

    # ------------------------------------------------------------------------------------------------------
    def _deliver(self, results: list[tuple[str, asyncio.Future[Response], Response]]) -> None:
        """Store the good responses (one transaction), then hand every response to whoever waits for it. A store
        that raises fails the requests it was given, never leaves them waiting (the task would hang)."""
        try:
            self.store.put_many(
                [
                    CacheEntry(k, self.kind, r.text or "", r.info, r.spoken)
                    for k, _, r in results
                    if r.ok and r.text is not None
                ]
            )
        except Exception as err:
            self._fail([(k, f) for k, f, _ in results], err)
            return
        for key, future, response in results:
            self.stats.failed += int(not response.ok)
            self._answered.add(key)
            self._twins.pop(key, None)
            if not future.done():
                future.set_result(response)

    def _fail(self, pending: list[tuple[str, asyncio.Future[Response]]], err: BaseException) -> None:
        """The backend raised (EndpointDown, a ModelError) or the work was cancelled: pass it on."""
        for key, future in pending:
            self._twins.pop(key, None)
            if future.done():
                continue
            if isinstance(err, Exception):
                self.stats.failed += 1
                future.set_exception(err)
            else:
                future.cancel()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------------------------------------------
    async def close(self) -> None:
        """Cancel what is still in flight (a failed or interrupted run) and release the loop's resources."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for pool in (self._executor, self._audio):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self._executor = self._audio = None
        await self.model.aclose()


def _follow(twin: asyncio.Future[Response], mine: asyncio.Future[Response]) -> None:
    """A request identical to one in flight gets that one's response (marked as not computed for it)."""
    if mine.done():
        return
    if twin.cancelled():
        mine.cancel()
    elif twin.exception() is not None:
        mine.set_exception(twin.exception())  # type: ignore[arg-type]
    else:
        r = twin.result()
        mine.set_result(replace(r, cached=r.ok, latency_s=0.0))
