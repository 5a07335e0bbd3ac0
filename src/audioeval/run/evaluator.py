"""The evaluation loop: one streaming pipeline per task and process.

This rank takes its slice of the episode indices (index % world_size == rank). A background thread
synthesizes episodes ahead and renders one request per shot count (feed.py); each request goes to the
serving path (serving.py: cache, in-run deduplication, generation, caching as responses arrive) as soon as
it is rendered — at once for a streaming backend, in fixed windows for a batch backend; each response goes to
the judges the moment it arrives; finished samples are scored in small batches on a worker thread and
logged as they complete. Every stage is bounded (see TaskPipeline), so memory does not grow with the number
of samples. Rank 0 then gathers the rows, merges the logs in (episode, k) order and aggregates — so results
do not depend on process count, batch size, concurrency or timing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tqdm.auto import tqdm

from audioeval.errors import UsageError
from audioeval.models.base import Model
from audioeval.results.outputs import SampleLog
from audioeval.results.sample_record import Judgments as SampleJudgments
from audioeval.results.sample_record import SampleRecord, SpokenBlock
from audioeval.results.score_rows import ScoreRow, facet_values
from audioeval.results.scoring import Judgments, SampleToScore
from audioeval.run.cache import ResponseStore
from audioeval.run.distributed import Topology
from audioeval.run.episode_store import EpisodeStore, stored_pairs, task_key
from audioeval.run.feed import EpisodeFeed
from audioeval.run.prepared import PreparedTask
from audioeval.run.serving import Server
from audioeval.types import Request, RequestId, Response

if TYPE_CHECKING:
    from audioeval.run.judging import JudgePanel
    from audioeval.run.speaking import Heard, SpeechStage

log = logging.getLogger("audioeval")

SCORE_BATCH_MAX = 256  # finished samples scored together at most
SCORE_LINGER_S = 0.2  # a metric call costs milliseconds whatever its size: let a few samples gather first
UNSCORED_MAX = 4096  # finished samples (without audio) waiting for the scoring thread


@dataclass
class EvalSettings:
    log_samples: bool = False
    show_progress: bool = True


@dataclass
class TaskTiming:
    wall_s: float = 0.0
    busy_s: float = 0.0  # sum over ranks of each rank's time in the task loop
    synthesis_s: float = 0.0  # on the background thread, overlapping the rest
    generate_s: float = 0.0  # time with at least one model request in flight
    judge_s: float = 0.0  # time with at least one judge request in flight (summed over judges)
    asr_s: float = 0.0  # time with at least one ASR request of a spoken answer in flight
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
    reference_rows: dict[str, list[ScoreRow]] = field(default_factory=dict)  # reference model -> its rows


class Evaluator:
    def __init__(
        self,
        tasks: list[PreparedTask],
        model: Model,
        cache: ResponseStore,
        topology: Topology,
        run_dir: Path,
        settings: EvalSettings,
        judge: JudgePanel | None = None,
        references: dict[str, Model] | None = None,
        speech: SpeechStage | None = None,
        episodes: EpisodeStore | None = None,
    ) -> None:
        self.tasks = tasks
        self.episodes = episodes
        self.model = model
        self.server = Server(model, cache, kind="generate")
        # reference models answer the same requests through servers of their own (reference_models.py)
        self.references = {n: Server(m, cache, kind="reference") for n, m in (references or {}).items()}
        self.topology = topology
        self.run_dir = run_dir
        self.settings = settings
        self.judge = judge
        self.speech = speech  # set when the model answers in speech (speaking.py)

    def run_task(self, task: PreparedTask) -> TaskOutcome:
        my_indices = task.indices[self.topology.rank :: self.topology.world_size]
        sample_log = None
        if self.settings.log_samples:
            if not self.run_dir.is_dir():
                raise UsageError(
                    f"--log_samples: process {self.topology.rank} cannot see the run folder {self.run_dir} that "
                    "process 0 created. With several machines, put --output_path on a filesystem they all share."
                )
            sample_log = SampleLog(self.run_dir, task.name, self.topology.rank)
            if self.speech is not None:
                self.speech.spoken_dir = self.run_dir / "spoken"
        world = self.topology.world_size
        total = len(task.indices) * len(task.shots)
        bar = tqdm(
            total=total,
            # what the user asked for: --limit episodes at each k of --num_fewshot
            desc=f"{task.name}: {total} requests ({len(task.indices)} episodes × {len(task.shots)} k)",
            unit="request",
            disable=not (self.settings.show_progress and self.topology.is_main),
            dynamic_ncols=True,
        )
        judge = self.judge if (self.judge is not None and task.config.judge) else None
        names = task.config.reference_models if task.augment is None else ()
        references = {n: self.references[n] for n in names if n in self.references}
        # judges and the speech stage read the episode or the audio itself: those tasks always synthesize
        key = task_key(task) if self.episodes is not None and judge is None and self.speech is None else None
        stored = (self.episodes, key) if self.episodes is not None and key is not None else None
        pipeline = TaskPipeline(
            task,
            self.server,
            judge,
            sample_log,
            lambda n: bar.update(n * world),
            references,
            self.speech,
            stored,
        )
        try:
            rows, timing = asyncio.run(pipeline.run(my_indices))
        finally:
            bar.close()
            if sample_log is not None:
                sample_log.close()
        for task_rows in (rows, *pipeline.reference_rows.values()):
            task_rows.sort(key=lambda r: (r.episode, r.k))
        return TaskOutcome(rows=rows, timing=timing, reference_rows=pipeline.reference_rows)


@dataclass
class _Finished:
    """A sample whose response (and verdicts) arrived, without its audio: what scoring and logging need."""

    rid: RequestId
    sample_info: dict[str, Any]
    target: str
    response: Response
    judgments: Judgments | None
    audio_seconds: float
    described: dict[str, Any] | None  # the request as the sample log shows it (when logging)
    references: dict[str, Response] = field(default_factory=dict)  # reference model -> its response
    spoken: Heard | None = None  # what the speech stage made of a spoken answer (its block and metrics)


class TaskPipeline:
    """One task on one process: feed -> serve -> judge -> score -> log, all overlapping.

    Two bounds keep memory flat: at most `pending_limit` samples are between rendering and their last reply
    (they hold audio), and at most UNSCORED_MAX finished samples (audio dropped) wait for the scoring thread.
    """

    def __init__(
        self,
        task: PreparedTask,
        server: Server,
        judge: JudgePanel | None,
        sample_log: SampleLog | None,
        progress: Callable[[int], Any],
        references: dict[str, Server] | None = None,
        speech: SpeechStage | None = None,
        episodes: tuple[EpisodeStore, str] | None = None,
    ) -> None:
        self.task = task
        self.server = server
        self.speech = speech
        self.episodes = episodes  # the episode store and this task's key in it (unjudged tasks only)
        self.references = references or {}
        self.reference_rows: dict[str, list[ScoreRow]] = {name: [] for name in self.references}
        self.judge = judge
        self.sample_log = sample_log
        self.progress = progress
        model = server.model
        # a batch backend gets fixed windows of requests (sorted and chunked inside each), so what is batched
        # with what depends only on the request order; a streaming backend gets each request at once
        self.window = max(1, model.batch_window)
        streaming = model.max_in_flight if model.streams else 0
        judging = judge.max_in_flight if judge is not None else 0
        hearing = speech.max_in_flight if speech is not None else 0
        self.pending_limit = 2 * self.window + 2 * (streaming + judging + hearing) + 16
        self.rows: list[ScoreRow] = []
        self.timing = TaskTiming()
        self._error: BaseException | None = None
        self._samples: set[asyncio.Task[None]] = set()
        self._dispatched = 0
        self._scored = 0
        self._all_dispatched = False

    async def run(self, indices: list[int]) -> tuple[list[ScoreRow], TaskTiming]:
        started = time.perf_counter()
        generate_before = self.server.stats.busy_now()
        judge_before = self.judge.busy_now() if self.judge is not None else 0.0
        asr_before = self.speech.busy_now() if self.speech is not None else 0.0
        hits_before = self.server.cache_hits
        self._main = asyncio.current_task()
        self._pending = asyncio.Semaphore(self.pending_limit)
        self._unscored = asyncio.Semaphore(UNSCORED_MAX)
        self._ready: asyncio.Queue[_Finished | None] = asyncio.Queue()
        self._scoring = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audioeval-scoring")
        ahead = max(4, math.ceil(self.window / max(1, len(self.task.shots))) + 2)
        feed = EpisodeFeed(
            self.task, indices, ahead, self._answered_episodes(indices), self.episodes is not None
        )
        scorer = asyncio.get_running_loop().create_task(self._score_loop())
        scorer.add_done_callback(self._abort_on_error)
        try:
            window: list[tuple[Request, str]] = []
            async for pairs in feed:
                for pair in pairs:
                    await self._pending.acquire()
                    window.append(pair)
                    if len(window) >= self.window:
                        self._dispatch(window)
                        window = []
            if window:
                self._dispatch(window)
            self._all_dispatched = True
            self._ready.put_nowait(None)  # wakes the scorer to see that everything was dispatched
            await scorer
            if self.episodes is not None:
                store, key = self.episodes
                store.put_many(key, feed.described)
        except asyncio.CancelledError:
            if self._error is not None:  # a stage failed and stopped the pipeline: report that, not the stop
                raise self._error from None
            raise
        finally:
            feed.stop()
            await self._stop(scorer)
        self.timing.wall_s = self.timing.busy_s = time.perf_counter() - started
        self.timing.synthesis_s = feed.synthesis_s
        self.timing.generate_s = self.server.stats.busy_now() - generate_before
        self.timing.judge_s = (self.judge.busy_now() - judge_before) if self.judge is not None else 0.0
        self.timing.asr_s = (self.speech.busy_now() - asr_before) if self.speech is not None else 0.0
        self.timing.cached = self.server.cache_hits - hits_before
        return self.rows, self.timing

    def _answered_episodes(self, indices: list[int]) -> dict[int, list[tuple[Request, str]]]:
        """The stored episodes whose every request has its answer in the response store, for the model and
        each reference model: those need no synthesis (episode_store.py)."""
        if self.episodes is None:
            return {}
        store, key = self.episodes
        pairs = {
            i: stored_pairs(self.task, i, records) for i, records in store.get_many(key, indices).items()
        }
        answered = set(pairs)
        for server in [self.server, *self.references.values()]:
            keys = {i: [request.content_key(server.identity) for request, _ in p] for i, p in pairs.items()}
            hits = server.store.get_many(list(dict.fromkeys(k for ks in keys.values() for k in ks)))
            answered &= {i for i, ks in keys.items() if all(k in hits for k in ks)}
        return {i: pairs[i] for i in sorted(answered)}

    async def _stop(self, scorer: asyncio.Task[None]) -> None:
        """Cancel whatever is still in flight (nothing, after a normal finish), log the samples that had
        finished, then release the loop's resources. Every response received is in the cache already."""
        leftovers = [t for t in self._samples if not t.done()] + ([scorer] if not scorer.done() else [])
        for t in leftovers:
            t.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)
        finished = [item for item in _drain(self._ready) if item is not None]
        if finished and self.sample_log is not None:
            try:
                await asyncio.get_running_loop().run_in_executor(self._scoring, self._score_and_log, finished)
            except Exception as err:  # noqa: BLE001 - the run is stopping for another reason; keep that one
                log.warning("could not log the %d samples that had finished: %s", len(finished), err)
        await self.server.close()
        for reference in self.references.values():
            await reference.close()
        if self.judge is not None:
            await self.judge.close_servers()
        if self.speech is not None:
            await self.speech.close()
        self._scoring.shutdown(wait=True)

    def _abort_on_error(self, task: asyncio.Task[Any]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if self._error is None:
            self._error = task.exception()
            if self._main is not None:
                self._main.cancel()

    # ------------------------------------------------------------------------------------------------------
    def _dispatch(self, pairs: list[tuple[Request, str]]) -> None:
        requests = [r for r, _ in pairs]
        futures = self.server.submit(requests)
        answers = {name: server.submit(requests) for name, server in self.references.items()}
        loop = asyncio.get_running_loop()
        for i, ((request, target), future) in enumerate(zip(pairs, futures, strict=True)):
            references = {name: theirs[i] for name, theirs in answers.items()}
            sample = loop.create_task(self._sample(request, target, future, references))
            self._samples.add(sample)
            sample.add_done_callback(self._samples.discard)
            sample.add_done_callback(self._abort_on_error)
            self._dispatched += 1

    async def _sample(
        self,
        request: Request,
        target: str,
        future: asyncio.Future[Response],
        references: dict[str, asyncio.Future[Response]],
    ) -> None:
        response = await future
        heard = None
        if self.speech is not None and response.ok and response.spoken is not None:
            heard = await self.speech.hear(request, response)  # the text to score, chosen from what was said
            response = heard.response
        judgments = None
        if self.judge is not None and response.ok:
            sample = SampleToScore(response.text or "", target, request.info["sample_info"])
            judgments = await self.judge.judge_sample(self.task, request, sample)
        described = None
        if self.sample_log is not None:
            described = {
                "request_key": request.content_key(self.server.identity),
                "messages": request.describe(),
                "gen_kwargs": request.gen_kwargs,
            }
        finished = _Finished(
            request.rid,
            request.info["sample_info"],
            target,
            response,
            judgments,
            request.audio_seconds,
            described,
            {name: await answer for name, answer in references.items()},
            heard,
        )
        await self._unscored.acquire()
        self._ready.put_nowait(finished)
        self._pending.release()

    async def _score_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not (self._all_dispatched and self._scored == self._dispatched):
            first = await self._ready.get()
            if first is not None and not self._all_dispatched and self._ready.qsize() < SCORE_BATCH_MAX // 8:
                await asyncio.sleep(SCORE_LINGER_S)
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
            self.progress(len(batch))

    # ------------------------------------------------------------------------------------------------------
    def _score_and_log(self, batch: list[_Finished]) -> None:
        """On the scoring thread: score the finished samples, keep their rows, append their records."""
        judgments, judge_ids = None, None
        if self.judge is not None:
            judgments = [f.judgments or {} for f in batch if f.response.ok]
            judge_ids = [j.judge_id for j in self.judge.judges]
        results = self._score_all([f.response for f in batch], batch, judgments, judge_ids)
        for done, result in zip(batch, results, strict=True):
            if done.spoken is not None and done.response.ok:
                result["scores"] = {**result["scores"], **done.spoken.scores}  # beside the task's own
        records = []
        for done, result in zip(batch, results, strict=True):
            error = not done.response.ok
            self.timing.samples += 1
            self.timing.errors += int(error)
            self.timing.audio_s += done.audio_seconds
            self.rows.append(self._row(done, done.response, result))
            if self.sample_log is not None:
                records.append(self._record(done, result))
        if self.sample_log is not None:
            self.sample_log.write(records)
        for name, rows in self.reference_rows.items():  # unjudged, as a reference model's answers always are
            answers = [f.references[name] for f in batch]
            scored = self._score_all(answers, batch, None, None)
            rows.extend(self._row(f, r, x) for f, r, x in zip(batch, answers, scored, strict=True))

    def _score_all(
        self,
        responses: list[Response],
        batch: list[_Finished],
        judgments: list[Judgments] | None,
        judge_ids: list[str] | None,
    ) -> list[dict[str, Any]]:
        """One scoring result per sample; a sample without an answer gets an empty one."""
        ok = [i for i, r in enumerate(responses) if r.ok]
        to_score = [SampleToScore(responses[i].text or "", batch[i].target, batch[i].sample_info) for i in ok]
        scored = dict(
            zip(ok, self.task.scorer.score(to_score, judgments=judgments, judge_ids=judge_ids), strict=True)
        )
        return [
            scored.get(i) or {"prediction": None, "parse_failure": False, "scores": {}}
            for i in range(len(batch))
        ]

    def _row(self, done: _Finished, response: Response, result: dict[str, Any]) -> ScoreRow:
        return ScoreRow(
            episode=done.rid.episode,
            k=done.rid.shots,
            scores=result["scores"],
            parse_failure=result["parse_failure"],
            error=not response.ok,
            audio_seconds=done.audio_seconds,
            error_message=response.error if not response.ok else None,
            facets=facet_values(done.sample_info["metadata"], self.task.config.facets),
        )

    def _record(self, done: _Finished, result: dict[str, Any]) -> SampleRecord:
        response, described = done.response, done.described or {}
        return SampleRecord(
            task=self.task.name,
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
            spoken=cast("SpokenBlock", done.spoken.block) if done.spoken is not None else None,
            judgments=cast("SampleJudgments", done.judgments),
            failure=response.failure,
        )


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    items = []
    while not queue.empty():
        items.append(queue.get_nowait())
    return items
