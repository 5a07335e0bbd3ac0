"""What one backend was asked and how it answered, as results.json reports it per endpoint (the model, each
judge): requests sent, retries, HTTP 429s, 5xx answers, timeouts, requests given up, latency percentiles,
the most requests in flight at once and the time anything was in flight. Memory stays constant however many
requests a run sends: latencies go into a histogram with buckets 2% apart."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

_BUCKET_RATIO = 1.02
_FLOOR_S = 1e-4  # latencies below 0.1 ms share the first bucket


@dataclass
class LatencyHistogram:
    counts: dict[int, int] = field(default_factory=dict)
    total: int = 0

    def add(self, seconds: float) -> None:
        bucket = 0 if seconds <= _FLOOR_S else 1 + int(math.log(seconds / _FLOOR_S, _BUCKET_RATIO))
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.total += 1

    def merge(self, other: LatencyHistogram) -> None:
        for bucket, n in other.counts.items():
            self.counts[bucket] = self.counts.get(bucket, 0) + n
        self.total += other.total

    def quantile(self, q: float) -> float | None:
        """The upper edge of the bucket holding the q-quantile (within 2% of the true value)."""
        if not self.total:
            return None
        rank = max(1, math.ceil(q * self.total))
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return _FLOOR_S * _BUCKET_RATIO**bucket
        return None  # unreachable: the counts sum to total


@dataclass
class EndpointStats:
    requests: int = 0  # requests sent (cache hits and in-run twins are not sent)
    retries: int = 0  # attempts beyond each request's first
    http_429: int = 0
    http_5xx: int = 0
    timeouts: int = 0
    failed: int = 0  # requests given up after their retries
    peak_in_flight: int = 0
    busy_s: float = 0.0  # time with at least one request in flight
    concurrency_min: float | None = None  # the lowest adaptive concurrency limit reached (API endpoints)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    in_flight: int = 0
    _busy_since: float = 0.0

    def enter(self, n: int = 1) -> None:
        if self.in_flight == 0:
            self._busy_since = time.perf_counter()
        self.in_flight += n
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def leave(self, n: int = 1) -> None:
        self.in_flight -= n
        if self.in_flight == 0:
            self.busy_s += time.perf_counter() - self._busy_since

    def busy_now(self) -> float:
        """busy_s including the stretch in progress (to measure a task while requests are still out)."""
        running = time.perf_counter() - self._busy_since if self.in_flight else 0.0
        return self.busy_s + running

    def merge(self, other: EndpointStats) -> None:
        """Add another process's figures (peak in flight: the largest of the processes')."""
        for name in ("requests", "retries", "http_429", "http_5xx", "timeouts", "failed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.busy_s += other.busy_s
        self.peak_in_flight = max(self.peak_in_flight, other.peak_in_flight)
        if other.concurrency_min is not None:
            mine = self.concurrency_min
            self.concurrency_min = other.concurrency_min if mine is None else min(mine, other.concurrency_min)
        self.latency.merge(other.latency)

    def figures(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        out: dict[str, Any] = {
            "requests": self.requests,
            "retries": self.retries,
            "http_429": self.http_429,
            "http_5xx": self.http_5xx,
            "timeouts": self.timeouts,
            "failed": self.failed,
            "latency_p50_s": rounded(self.latency.quantile(0.5)),
            "latency_p95_s": rounded(self.latency.quantile(0.95)),
            "peak_in_flight": self.peak_in_flight,
            "busy_seconds": round(self.busy_s, 4),
        }
        if self.concurrency_min is not None:
            out["concurrency_min"] = int(self.concurrency_min)
        return out
