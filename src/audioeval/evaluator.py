"""The evaluation loop.

For each task: this rank takes its slice of the episode indices (index % world_size == rank), builds the
episodes in small windows, renders one request per shot count, serves what it can from the response cache,
sends the rest to the model in length-sorted chunks (caching each response as it arrives), scores the
window and appends the sample records to its log. Rank 0 then gathers the per-sample scores, merges the
logs in (episode, k) order and aggregates — so results are identical for any process count or batch size.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from audioeval.cache import NoCache, ResponseCache
from audioeval.distributed import Topology
from audioeval.models.base import Model
from audioeval.outputs import SampleLog
from audioeval.prepared import PreparedTask
from audioeval.scoring import SampleToScore, TaskScorer
from audioeval.types import Request, Response, describe_messages

log = logging.getLogger("audioeval")


@dataclass
class EvalSettings:
    log_samples: bool = False
    show_progress: bool = True


@dataclass
class ScoreRow:
    episode: int
    k: int
    scores: dict[str, float | None]
    parse_failure: bool
    error: bool
    audio_seconds: float
    error_message: str | None = None  # why the model gave no answer (first one is shown at the end of a run)


@dataclass
class TaskTiming:
    wall_s: float = 0.0
    busy_s: float = 0.0  # sum over ranks of each rank's time in the task loop
    synthesis_s: float = 0.0
    generate_s: float = 0.0
    judge_s: float = 0.0
    audio_s: float = 0.0
    samples: int = 0
    cached: int = 0
    errors: int = 0

    def add(self, other: TaskTiming) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class TaskOutcome:
    rows: list[ScoreRow]
    timing: TaskTiming
    per_rank_timing: list[TaskTiming] = field(default_factory=list)


def _sort_key(request: Request) -> tuple[float, int]:
    """Longest first, so a batch holds requests of similar length and memory peaks early."""
    return (-request.audio_seconds, -sum(len(m.text) for m in request.messages))


class Evaluator:
    def __init__(
        self,
        tasks: list[PreparedTask],
        model: Model,
        cache: ResponseCache | NoCache,
        topology: Topology,
        run_dir: Path,
        settings: EvalSettings,
        judge: Any = None,
    ) -> None:
        self.tasks = tasks
        self.model = model
        self.cache = cache
        self.topology = topology
        self.run_dir = run_dir
        self.settings = settings
        self.judge = judge

    # ------------------------------------------------------------------------------------------------------
    def run_task(self, task: PreparedTask) -> TaskOutcome:
        started = time.perf_counter()
        timing = TaskTiming()
        scorer = task.scorer
        my_indices = task.indices[self.topology.rank :: self.topology.world_size]
        total = len(my_indices) * len(task.shots)
        chunk = self.model.request_chunk_size
        episodes_per_window = max(1, (chunk * 4) // max(1, len(task.shots)))
        sample_log = (
            SampleLog(self.run_dir, task.name, self.topology.rank) if self.settings.log_samples else None
        )
        bar = tqdm(
            total=total * self.topology.world_size,
            desc=task.name,
            unit="sample",
            disable=not (self.settings.show_progress and self.topology.is_main),
            dynamic_ncols=True,
        )
        rows: list[ScoreRow] = []
        try:
            for start in range(0, len(my_indices), episodes_per_window):
                window = my_indices[start : start + episodes_per_window]
                t0 = time.perf_counter()
                episodes = [task.episode(i) for i in window]
                timing.synthesis_s += time.perf_counter() - t0
                pairs = [pair for ep in episodes for pair in task.requests_for(ep)]
                responses = self._responses([r for r, _ in pairs], timing)
                window_rows, records = self._score(task, scorer, pairs, responses, timing)
                rows.extend(window_rows)
                if sample_log is not None:
                    sample_log.write(records)
                bar.update(len(pairs) * self.topology.world_size)
        finally:
            bar.close()
            if sample_log is not None:
                sample_log.close()
        timing.wall_s = timing.busy_s = time.perf_counter() - started
        return TaskOutcome(rows=rows, timing=timing)

    # ------------------------------------------------------------------------------------------------------
    def _responses(self, requests: list[Request], timing: TaskTiming) -> list[Response]:
        identity = self.model.identity
        keys = [r.content_key(identity) for r in requests]
        hits = self.cache.get_many(keys)
        responses: list[Response | None] = [None] * len(requests)
        for i, key in enumerate(keys):
            if key in hits:
                text, info = hits[key]
                responses[i] = Response(text=text, cached=True, info=info)
                timing.cached += 1
        first_of: dict[str, int] = {}  # identical requests (same content key) are sent once
        for i, r in enumerate(responses):
            if r is None:
                first_of.setdefault(keys[i], i)
        missing = sorted(first_of.values(), key=lambda i: _sort_key(requests[i]))
        chunk = self.model.request_chunk_size
        for start in range(0, len(missing), chunk):
            batch = missing[start : start + chunk]
            t0 = time.perf_counter()
            produced = self.model.generate([requests[i] for i in batch])
            elapsed = time.perf_counter() - t0
            timing.generate_s += elapsed
            if len(produced) != len(batch):
                raise RuntimeError(
                    f"model {self.model.name!r} returned {len(produced)} responses for {len(batch)} requests"
                )
            to_cache = []
            for i, response in zip(batch, produced, strict=True):
                if not response.latency_s:
                    response.latency_s = elapsed / len(batch)
                responses[i] = response
                if response.ok:
                    to_cache.append((keys[i], "generate", response.text, response.info))
            self.cache.put_many(to_cache)
        for i, r in enumerate(responses):
            if r is None:
                twin = responses[first_of[keys[i]]]
                assert twin is not None
                responses[i] = Response(text=twin.text, error=twin.error, cached=twin.ok, info=twin.info)
        return [r for r in responses if r is not None]

    def _score(
        self,
        task: PreparedTask,
        scorer: TaskScorer,
        pairs: list[tuple[Request, str]],
        responses: list[Response],
        timing: TaskTiming,
    ) -> tuple[list[ScoreRow], list[dict[str, Any]]]:
        ok = [i for i, r in enumerate(responses) if r.ok]
        to_score = [
            SampleToScore(responses[i].text or "", pairs[i][1], pairs[i][0].info["sample_info"]) for i in ok
        ]
        judgments = None
        if self.judge is not None and task.config.judge:
            t0 = time.perf_counter()
            judgments = self.judge.judge(task, [pairs[i][0] for i in ok], to_score)
            timing.judge_s += time.perf_counter() - t0
        judge_ids = [j.judge_id for j in self.judge.judges] if judgments is not None else None
        scored = scorer.score(to_score, judgments=judgments, judge_ids=judge_ids)
        by_index = dict(zip(ok, scored, strict=True))
        judgment_of = dict(zip(ok, judgments, strict=True)) if judgments is not None else {}
        window_rows, records = [], []
        for i, ((request, target), response) in enumerate(zip(pairs, responses, strict=True)):
            result = by_index.get(i, {"prediction": None, "parse_failure": False, "scores": {}})
            error = not response.ok
            timing.samples += 1
            timing.errors += int(error)
            timing.audio_s += request.audio_seconds
            window_rows.append(
                ScoreRow(
                    episode=request.rid.episode,
                    k=request.rid.shots,
                    scores=result["scores"],
                    parse_failure=result["parse_failure"],
                    error=error,
                    audio_seconds=request.audio_seconds,
                    error_message=response.error if error else None,
                )
            )
            if self.settings.log_samples:
                record = {
                    "task": task.name,
                    "episode": request.rid.episode,
                    "episode_id": request.info["sample_info"].get("episode_id"),
                    "shots": request.rid.shots,
                    "metadata": request.info["sample_info"]["metadata"],
                    "request_key": request.content_key(self.model.identity),
                    "messages": describe_messages(request.messages),
                    "gen_kwargs": request.gen_kwargs,
                    "response": response.text,
                    "error": response.error,
                    "prediction": result["prediction"],
                    "target": target,
                    "parse_failure": result["parse_failure"],
                    "scores": result["scores"],
                    "audio_seconds": round(request.audio_seconds, 4),
                    "latency_s": round(response.latency_s, 6),
                    "cached": response.cached,
                }
                if response.info:
                    record["response_info"] = response.info
                if i in judgment_of:
                    record["judgments"] = judgment_of[i]
                records.append(record)
        return window_rows, records


def score_arrays(
    rows: list[ScoreRow], k: int, names: list[str]
) -> tuple[dict[str, np.ndarray], list[ScoreRow]]:
    """Per-sample score columns for one shot count, in episode order; missing values (including samples
    the model failed on) are NaN."""
    selected = sorted((r for r in rows if r.k == k), key=lambda r: r.episode)
    columns = {}
    for name in names:
        values = [r.scores.get(name) for r in selected]
        columns[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return columns, selected


def score_names(rows: list[ScoreRow]) -> list[str]:
    names: list[str] = []
    for r in rows:
        for name in r.scores:
            if name not in names:
                names.append(name)
    return names
