"""Adaptive concurrency for one API endpoint (AIMD, as TCP does): start at `num_concurrent` requests in flight;
halve the limit when the endpoint signals overload (429, 503, a timeout), add one request per round of
calm replies, and never go above `max_concurrent` or below one. A slot is held only while an attempt is on
the wire; a request waiting to retry gives its slot back.

It works across event loops (the evaluator runs one per task): waiters are plain futures of the running loop,
and the limit learnt in one task carries over to the next."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from audioeval.models.endpoint_stats import EndpointStats


@dataclass(frozen=True)
class Slot:
    epoch: int  # the limit's generation when the slot was taken: one overload signal per generation counts


class AdaptiveLimit:
    def __init__(self, start: int, maximum: int, stats: EndpointStats) -> None:
        self.maximum = max(1, int(maximum))
        self.limit = float(min(max(1, int(start)), self.maximum))
        self.stats = stats
        stats.concurrency_min = self.limit
        self._epoch = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def allowed(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> Slot:
        while self.stats.in_flight >= self.allowed:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif waiter.done() and not waiter.cancelled():
                    self._wake()  # it was woken for a free slot it will not take: pass the turn on
                raise
        self.stats.enter()
        return Slot(self._epoch)

    def release(self, slot: Slot, overloaded: bool = False) -> bool:
        """Give the slot back; `overloaded` when the attempt met a 429/503/timeout. True when the limit was
        lowered by this call."""
        self.stats.leave()
        lowered = False
        if overloaded:
            if slot.epoch == self._epoch:  # signals from attempts sent before the last cut are old news
                self.limit = max(1.0, self.limit / 2)
                self._epoch += 1
                lowered = True
                if self.stats.concurrency_min is None or self.limit < self.stats.concurrency_min:
                    self.stats.concurrency_min = self.limit
        elif self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + 1.0 / self.allowed)
        self._wake()
        return lowered

    def _wake(self) -> None:
        free = self.allowed - self.stats.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
