"""One streaming pipeline for the whole run on one process: every task, k and condition feeds one stream into
one serving path, in one event loop, so a task boundary never drains it.

The feed (feed.py) hands over the episodes of every task in the run's order, rendered; each request goes to
the model's server as soon as it is rendered (at once for a streaming backend; in fixed windows for a batch
backend, a window never spanning two tasks, so what is batched with what is what it was per task); each answer
goes through the stages (stages.py: speech, judges, reference models) the moment it arrives; finished samples
are scored in small batches on a worker thread and appended to their task's sample file. Connections and
sessions stay open for the whole run (the model's `aclose()` is called once, at its end).

Two bounds keep memory flat whatever the run's size: at most `pending_limit` samples are between rendering and
their last reply (they hold audio), and at most UNSCORED_MAX finished samples (audio dropped) wait for the
scoring thread. Each task keeps its own rows, progress bar, sample file and figures; rank 0 later sorts the
rows by (episode, k), so nothing depends on timing, concurrency, batch size or process count.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from audioeval.results.outputs import SampleLog
from audioeval.results.sample_record import Judgments as SampleJudgments
from audioeval.results.sample_record import SampleRecord, SpokenBlock
from audioeval.results.score_rows import ScoreRow, facet_values
from audioeval.results.scoring import Judgments, SampleToScore
from audioeval.run.distributed import Topology
from audioeval.run.feed import RunFeed, TaskDone
from audioeval.run.prepared import PreparedTask
from audioeval.run.progress import progress_bar
from audioeval.run.serving import Server
from audioeval.run.stages import RunContext, Sample, Stage
from audioeval.run.synthesis import EpisodeSource
from audioeval.run.timing import GENERATE_CPU, SYNTHESIS_CPU, TaskTiming
from audioeval.types import Request, RequestId, Response

log = logging.getLogger("audioeval")

SCORE_BATCH_MAX = 256  # finished samples scored together at most
# a metric call costs milliseconds whatever its size (an `evaluate` module's fixed cost): let samples gather
# for up to this long, or until half a batch is ready, or until every sample dispatched has arrived
SCORE_LINGER_S = 1.0
UNSCORED_MAX = 4096  # finished samples (without audio) waiting for the scoring thread


@dataclass
class Finished:
    """A sample whose answers arrived, without its audio: what scoring and logging need."""

    task: TaskRun
    rid: RequestId
    sample_info: dict[str, Any]
    target: str
    response: Response
    judgments: Judgments | None
    judge_ids: list[str] | None
    audio_seconds: float
    described: dict[str, Any] | None  # the request as the sample log shows it (when logging)
    references: dict[str, Response]
    scores: dict[str, float | None]
    blocks: dict[str, Any]


@dataclass
class TaskRun:
    """One task's share of the run on this process: its rows, progress bar, sample file and figures."""

    task: PreparedTask
    stages: list[Stage]
    bar: Any = None
    sample_log: SampleLog | None = None
    rows: list[ScoreRow] = field(default_factory=list)
    reference_rows: dict[str, list[ScoreRow]] = field(default_factory=dict)
    timing: TaskTiming = field(default_factory=TaskTiming)
    dispatched: int = 0
    scored: int = 0
    all_dispatched: bool = False
    done: bool = False
    started: float | None = None
    busy_before: dict[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.all_dispatched and self.scored == self.dispatched


class RunPipeline:
    def __init__(
        self,
        work: list[tuple[PreparedTask, list[int]]],
        server: Server,
        stages: list[Stage],
        source: EpisodeSource,
        topology: Topology,
        run_dir: Path | None,
        show_progress: bool,
        when_fed: Callable[[], Any] | None = None,
    ) -> None:
        self.work = work
        self.server = server
        self.stages = stages
        self.source = source
        self.topology = topology
        self.run_dir = run_dir  # set when samples are logged
        self.show_progress = show_progress
        self.when_fed = when_fed  # on the feed thread, once every request is rendered (RunFeed)
        model = server.model
        # a batch backend gets fixed windows of requests (sorted and chunked inside each), so what is batched
        # with what depends only on the request order; a streaming backend gets each episode's requests at once
        self.window = max(1, model.batch_window)
        self.streams = model.streams
        streaming = model.max_in_flight if model.streams else 0
        self.pending_limit = 2 * self.window + 2 * (streaming + sum(s.max_in_flight for s in stages)) + 16
        self.runs = [TaskRun(task, [s for s in stages if s.applies(task)]) for task, _ in work]
        self.failed_task: str | None = None  # the task whose failure stopped the run
        self.timing = TaskTiming()  # the whole run on this process
        self._error: BaseException | None = None
        self._samples: set[asyncio.Task[None]] = set()
        self._dispatched = 0
        self._arrived = 0  # samples whose answers all arrived (ready for scoring or scored)
        self._scored = 0
        self._all_dispatched = False

    async def run(self) -> None:
        with quiet_collector():
            await self._run()

    async def _run(self) -> None:
        started = time.perf_counter()
        cpu = (time.process_time(), GENERATE_CPU.seconds, SYNTHESIS_CPU.seconds)
        busy_before = self._busy()
        self._main = asyncio.current_task()
        self._pending = asyncio.Semaphore(self.pending_limit)
        self._unscored = asyncio.Semaphore(UNSCORED_MAX)
        self._ready: asyncio.Queue[Finished | None] = asyncio.Queue()
        self._enough = asyncio.Event()  # a batch worth scoring is ready: see _score_loop
        self._scoring = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audioeval-scoring")
        shots = max(len(t.shots) for t, _ in self.work) if self.work else 1
        feed = RunFeed(self.work, self.source, max(4, math.ceil(self.window / shots) + 2), self.when_fed)
        context = RunContext(
            [t for t, _ in self.work], self.topology, self.run_dir, self.show_progress, self.source
        )
        for stage in self.stages:
            stage.begin(context)
        scorer = asyncio.get_running_loop().create_task(self._score_loop())
        scorer.add_done_callback(self._abort_on_error)
        try:
            await self._feed(feed)
            self._all_dispatched = True
            self._ready.put_nowait(None)  # wakes the scorer to see that everything was dispatched
            self._enough.set()
            await scorer
        except asyncio.CancelledError:
            if self._error is not None:  # a stage failed and stopped the pipeline: report that, not the stop
                raise self._error from None
            raise
        except BaseException:
            self.failed_task = self.failed_task or feed.failed_task or self._current_task_name()
            raise
        finally:
            feed.stop()
            await self._stop(scorer)
        self.timing.wall_s = self.timing.busy_s = time.perf_counter() - started
        self.timing.cpu_s = time.process_time() - cpu[0]
        self.timing.model_cpu_s = GENERATE_CPU.seconds - cpu[1]
        self.timing.synthesis_cpu_s = SYNTHESIS_CPU.seconds - cpu[2]
        self._add_busy(self.timing, busy_before)
        # every episode made for the run: its tasks' and those the reference models studied
        self.timing.synthesis_s = self.source.synthesis_s
        self.timing.synthesized = self.source.synthesized
        for r in self.runs:
            for name in ("samples", "cached", "errors", "audio_s"):
                setattr(self.timing, name, getattr(self.timing, name) + getattr(r.timing, name))

    async def _feed(self, feed: RunFeed) -> None:
        window: list[tuple[Request, str]] = []
        current: TaskRun | None = None
        async for item in feed:
            run = self.runs[item.position]
            if run is not current:  # a window never spans two tasks
                if window:
                    self._dispatch(current, window)  # type: ignore[arg-type]
                    window = []
                current = run
                self._start(run)
            if isinstance(item, TaskDone):
                if window:
                    self._dispatch(run, window)
                    window = []
                run.timing.synthesis_s, run.timing.synthesized = item.synthesis_s, item.synthesized
                run.all_dispatched = True
                self._maybe_done(run)
                continue
            for pair in item.pairs:
                await self._pending.acquire()
                window.append(pair)
                if len(window) >= self.window and not self.streams:
                    self._dispatch(run, window)
                    window = []
            if self.streams and window:  # an episode's requests go together: one look-up in the store
                self._dispatch(run, window)
                window = []

    def _current_task_name(self) -> str | None:
        started = [r for r in self.runs if r.started is not None and not r.done]
        return started[0].task.name if started else None

    # ---- tasks ----------------------------------------------------------------------------------------------
    def _start(self, run: TaskRun) -> None:
        if run.started is not None:
            return
        run.started = time.perf_counter()
        run.busy_before = self._busy()
        task = run.task
        total = len(task.indices) * len(task.shots)
        run.bar = progress_bar(
            self.show_progress and self.topology.is_main,
            total=total,
            # what the user asked for: --limit episodes at each k of --num_fewshot
            desc=f"{task.name}: {total} requests ({len(task.indices)} episodes × {len(task.shots)} k)",
            unit="request",
        )
        if self.run_dir is not None:
            run.sample_log = SampleLog(self.run_dir, task.name, self.topology.rank)
        run.reference_rows = {name: [] for stage in run.stages for name in stage.row_sets(task)}

    def _maybe_done(self, run: TaskRun) -> None:
        if run.done or not run.finished:
            return
        run.done = True
        assert run.started is not None
        run.timing.wall_s = run.timing.busy_s = time.perf_counter() - run.started
        self._add_busy(run.timing, run.busy_before)
        self._close_task(run)

    def _close_task(self, run: TaskRun) -> None:
        if run.bar is not None:
            run.bar.close()
            run.bar = None
        if run.sample_log is not None:
            run.sample_log.close()
            run.sample_log = None

    def _busy(self) -> dict[str, float]:
        busy = {"": self.server.stats.busy_now()}
        for stage in self.stages:
            if stage.name:
                busy[stage.name] = stage.busy_now()
        return busy

    def _add_busy(self, timing: TaskTiming, before: dict[str, float]) -> None:
        now = self._busy()
        timing.generate_s = now[""] - before.get("", 0.0)
        timing.stage_s = {name: now[name] - before.get(name, 0.0) for name in now if name}

    # ---- samples --------------------------------------------------------------------------------------------
    def _dispatch(self, run: TaskRun, pairs: list[tuple[Request, str]]) -> None:
        requests = [r for r, _ in pairs]
        hits = self.server.cache_hits
        futures = self.server.submit(requests)
        run.timing.cached += self.server.cache_hits - hits
        samples = [Sample(run.task, r, t, f) for (r, t), f in zip(pairs, futures, strict=True)]
        for stage in run.stages:
            stage.dispatch(samples)
        loop = asyncio.get_running_loop()
        for sample in samples:
            work = loop.create_task(self._sample(run, sample))
            self._samples.add(work)
            work.add_done_callback(self._samples.discard)
            work.add_done_callback(partial(self._abort_on_error, name=run.task.name))
            run.dispatched += 1
            self._dispatched += 1

    async def _sample(self, run: TaskRun, sample: Sample) -> None:
        sample.response = await sample.answer
        for stage in run.stages:
            await stage.finish(sample)
        request, response = sample.request, sample.response
        described = None
        if run.sample_log is not None:
            described = {
                "request_key": request.content_key(self.server.identity),
                "messages": request.describe(),
                "gen_kwargs": request.gen_kwargs,
            }
        finished = Finished(
            run,
            request.rid,
            request.info["sample_info"],
            sample.target,
            response,
            sample.judgments,
            sample.judge_ids,
            request.audio_seconds,
            described,
            sample.references,
            sample.scores,
            sample.blocks,
        )
        await self._unscored.acquire()
        self._ready.put_nowait(finished)
        self._arrived += 1
        if self._batch_ready():
            self._enough.set()
        self._pending.release()

    def _abort_on_error(self, task: asyncio.Task[Any], name: str | None = None) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if self._error is None:
            self._error = task.exception()
            self.failed_task = name or self._current_task_name()
            if self._main is not None:
                self._main.cancel()

    # ---- scoring --------------------------------------------------------------------------------------------
    def _batch_ready(self) -> bool:
        """Half a batch waits, or every sample dispatched has arrived: score now rather than linger."""
        everything = self._all_dispatched and self._arrived == self._dispatched
        return everything or self._ready.qsize() >= SCORE_BATCH_MAX // 2

    async def _score_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not (self._all_dispatched and self._scored == self._dispatched):
            first = await self._ready.get()
            if first is not None and not self._batch_ready():
                self._enough.clear()
                try:
                    await asyncio.wait_for(self._enough.wait(), SCORE_LINGER_S)
                except TimeoutError:
                    pass
            batch = [first] if first is not None else []
            while not self._ready.empty() and len(batch) < SCORE_BATCH_MAX:
                item = self._ready.get_nowait()
                if item is not None:
                    batch.append(item)
            if not batch:
                continue
            await loop.run_in_executor(self._scoring, self._score_and_log, batch)
            self._scored += len(batch)
            for _ in batch:
                self._unscored.release()
            for run, items in _by_task(batch):
                run.scored += len(items)
                if run.bar is not None:
                    run.bar.update(len(items) * self.topology.world_size)
                self._maybe_done(run)

    def _score_and_log(self, batch: list[Finished]) -> None:
        """On the scoring thread: score the finished samples of each task, keep their rows, log them."""
        for run, items in _by_task(batch):
            score_task(run, items)

    async def _stop(self, scorer: asyncio.Task[None]) -> None:
        """Cancel whatever is still in flight (nothing, after a normal finish), log the samples that had
        finished, then release the loop's resources. Every response received is in the cache already."""
        leftovers = [t for t in self._samples if not t.done()] + ([scorer] if not scorer.done() else [])
        for t in leftovers:
            t.cancel()
        self.source.stop()  # whoever waits for episodes (a reference model's study) stops waiting
        await asyncio.gather(*leftovers, return_exceptions=True)
        finished = [item for item in _drain(self._ready) if item is not None]
        if finished and any(f.task.sample_log is not None for f in finished):
            try:
                await asyncio.get_running_loop().run_in_executor(self._scoring, self._score_and_log, finished)
            except Exception as err:  # noqa: BLE001 - the run is stopping for another reason; keep that one
                log.warning("could not log the %d samples that had finished: %s", len(finished), err)
        for run in self.runs:
            self._close_task(run)
        await self.server.close()
        for stage in self.stages:
            await stage.aclose()
        self._scoring.shutdown(wait=True)


@contextmanager
def quiet_collector() -> Iterator[None]:
    """For the run, what was set up before it (modules, task configs, compiled templates: some 300,000 objects)
    is left out of the cyclic garbage collector's full passes: each walked every one of them, 0.1-0.25 s of CPU
    with the event loop stopped, a few times per run. Undone afterwards (they rejoin the oldest generation)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


# ---- scoring and records (on the scoring thread) -------------------------------------------------------------
def score_task(run: TaskRun, batch: list[Finished]) -> None:
    """Score one task's finished samples, keep their rows, append their records, score the reference answers."""
    judgments, judge_ids = None, batch[0].judge_ids
    if judge_ids is not None:
        judgments = [f.judgments or {} for f in batch if f.response.ok]
    results = _score_all(run.task, [f.response for f in batch], batch, judgments, judge_ids)
    records = []
    for done, result in zip(batch, results, strict=True):
        if done.scores and done.response.ok:
            result["scores"] = {**result["scores"], **done.scores}  # beside the task's own
        error = not done.response.ok
        run.timing.samples += 1
        run.timing.errors += int(error)
        run.timing.audio_s += done.audio_seconds
        run.rows.append(_row(run.task, done, done.response, result))
        if run.sample_log is not None:
            records.append(sample_record(run.task, done, result))
    if run.sample_log is not None:
        run.sample_log.write(records)
    for name, rows in run.reference_rows.items():  # unjudged, as a reference model's answers always are
        answers = [f.references[name] for f in batch]
        scored = _score_all(run.task, answers, batch, None, None)
        rows.extend(_row(run.task, f, r, x) for f, r, x in zip(batch, answers, scored, strict=True))


def _score_all(
    task: PreparedTask,
    responses: list[Response],
    batch: list[Finished],
    judgments: list[Judgments] | None,
    judge_ids: list[str] | None,
) -> list[dict[str, Any]]:
    """One scoring result per sample; a sample without an answer gets an empty one."""
    ok = [i for i, r in enumerate(responses) if r.ok]
    to_score = [SampleToScore(responses[i].text or "", batch[i].target, batch[i].sample_info) for i in ok]
    scored = dict(zip(ok, task.scorer.score(to_score, judgments=judgments, judge_ids=judge_ids), strict=True))
    return [
        scored.get(i) or {"prediction": None, "parse_failure": False, "scores": {}} for i in range(len(batch))
    ]


def _row(task: PreparedTask, done: Finished, response: Response, result: dict[str, Any]) -> ScoreRow:
    return ScoreRow(
        episode=done.rid.episode,
        k=done.rid.shots,
        scores=result["scores"],
        parse_failure=result["parse_failure"],
        error=not response.ok,
        audio_seconds=done.audio_seconds,
        error_message=response.error if not response.ok else None,
        facets=facet_values(done.sample_info["metadata"], task.config.facets),
    )


def sample_record(task: PreparedTask, done: Finished, result: dict[str, Any]) -> SampleRecord:
    """One line of the task's sample file; the stages' blocks (spoken, judgments) come from `done.blocks`."""
    response, described = done.response, done.described or {}
    spoken, judgments = done.blocks.get("spoken"), done.blocks.get("judgments")
    return SampleRecord(
        task=task.name,
        episode=done.rid.episode,
        episode_id=done.sample_info.get("episode_id"),
        shots=done.rid.shots,
        metadata=done.sample_info["metadata"],
        request_key=described.get("request_key"),
        messages=described.get("messages"),
        gen_kwargs=described.get("gen_kwargs"),
        response=response.text,
        error=response.error,
        prediction=result["prediction"],
        target=done.target,
        parse_failure=result["parse_failure"],
        scores=result["scores"],
        audio_seconds=round(done.audio_seconds, 4),
        latency_s=round(response.latency_s, 6),
        cached=response.cached,
        response_info=response.info or None,
        spoken=cast("SpokenBlock", spoken) if spoken is not None else None,
        judgments=cast("SampleJudgments", judgments),
        failure=response.failure,
    )


def _by_task(batch: list[Finished]) -> list[tuple[TaskRun, list[Finished]]]:
    groups: dict[int, tuple[TaskRun, list[Finished]]] = {}
    for item in batch:
        groups.setdefault(id(item.task), (item.task, []))[1].append(item)
    return list(groups.values())


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
