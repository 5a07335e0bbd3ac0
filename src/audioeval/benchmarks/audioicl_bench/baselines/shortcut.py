"""`shortcut`: what a model scores on AudioICL-Bench without analysing the signal.

It reads the labels the prompt shows, the task's label space and the identity of each clip's bytes (SHA-256),
never the samples. Before answering a task's first request it studies the task on PROBE_EPISODES episodes built
with another seed (the run's seed + PROBE_SEED_OFFSET, so none of them is evaluated) and learns two label
statistics: how often
each label occurs (query and demo labels), and, for each k, whether a query whose clip is no twin of a shown
clip ever has the label of one of the k demos. Each request is then answered by the first rule that applies:

1. clip identity: the query clip is byte-identical to a labelled clip of the prompt (a shown demo's clip in the
   query's role, or a context clip whose label is a possible answer): that clip's label;
2. elimination: where the probe never saw such a query repeat a demo label, the k demos' labels are struck
   from the label space;
3. label statistics: of the labels left, the most frequent in the probe (add-one smoothing), ties broken by a
   draw seeded per request as `chance` does.

A task score at or below this model's can be explained without listening. Each response's info
(`samples_<task>.jsonl`, `response_info.shortcut`) says which rule answered and among how many labels.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audioeval.benchmarks.audioicl_bench.common import TASK_IDS
from audioeval.errors import ModelError
from audioeval.models.base import Model, ModelTask
from audioeval.models.baselines.examples import Examples, examples_of
from audioeval.seeds import stable_seed
from audioeval.types import Request, RequestId, Response, ShownEpisode

PROBE_EPISODES = 40
PROBE_SEED_OFFSET = 7919
#: bump when a rule changes what the model answers, so cached responses of the old version are not reused
VERSION = 1

log = logging.getLogger("audioeval")


@dataclass
class TaskStatistics:
    """What the probe episodes of one task taught: label frequencies, and per k whether a query without a twin
    among the shown clips ever had the label of one of the k demos."""

    label_counts: Counter = field(default_factory=Counter)
    repeats_demo_label: dict[int, bool] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "label_counts": dict(sorted(self.label_counts.items())),
            "repeats_demo_label": {str(k): v for k, v in sorted(self.repeats_demo_label.items())},
        }

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.describe(), sort_keys=True).encode()).hexdigest()[:16]


def twin_label(view: Examples, choices: list[str]) -> str | None:
    """The label of a labelled clip of the prompt that is byte-identical to the query clip, if any."""
    target = view.target.sha256
    for example in [*view.examples, *view.context_examples]:
        if example.clip.sha256 == target and (not choices or example.label in choices):
            return example.label
    return None


class ShortcutModel(Model):
    name = "shortcut"
    needs_choices = True
    studies_audio = False  # labels and clip identities: outlines where the task makes them

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tasks: dict[str, ModelTask] = {}  # given to prepare(), studied when first asked about
        self.statistics: dict[str, TaskStatistics] = {}

    @classmethod
    def supported_tasks(cls) -> list[str]:
        # AudioICL-Bench only: its episodes are pure functions of the seed, so the studied episodes are unseen ones
        return sorted([f"audioicl_{t}" for t in TASK_IDS] + list(TASK_IDS))

    @property
    def identity(self) -> dict[str, Any]:
        # what the statistics are a function of (each task's configuration as it runs and the probe), not the
        # statistics themselves: a rerun whose answers are all cached then never studies a task
        probe = {"episodes": PROBE_EPISODES, "seed_offset": PROBE_SEED_OFFSET}
        studied = {name: task.config.content_hash() for name, task in sorted(self.tasks.items())}
        digest = hashlib.sha256(json.dumps([probe, studied], sort_keys=True).encode()).hexdigest()[:16]
        return {"model": self.name, "version": VERSION, "seed": self.seed, "probe": digest}

    def prepare(self, tasks: Sequence[ModelTask]) -> None:
        for task in tasks:
            self.check_task(task.name, task.config.builder_config)
            self.tasks.setdefault(task.name, task)

    def _statistics(self, task_name: str) -> TaskStatistics:
        if task_name not in self.statistics:
            if task_name not in self.tasks:
                raise ModelError(
                    f"model 'shortcut' has not been given task {task_name!r}; call prepare() with the task first."
                )
            self.statistics[task_name] = self.study(self.tasks[task_name])
        return self.statistics[task_name]

    def probe_episodes(self, task: ModelTask) -> tuple[int, int]:
        return int(task.config.builder_kwargs.get("seed", self.seed)) + PROBE_SEED_OFFSET, PROBE_EPISODES

    def study(self, task: ModelTask) -> TaskStatistics:
        """Label statistics from PROBE_EPISODES episodes of `task` built with another seed. They depend on the
        task's builder config only (not on --num_fewshot, --limit or the other tasks of the run). The episodes
        are outlines where the task makes them (labels and clip identities, nothing synthesized), else they come
        from the run (kept in its episode store: made once per configuration, whatever the model)."""
        started = time.perf_counter()
        config = task.config
        seed, count = self.probe_episodes(task)
        stats = TaskStatistics()
        for index, episode in enumerate(task.episodes_of_seed(seed, range(count), audio=self.studies_audio)):
            shots = len(episode.get("demos") or [])
            for k in range(shots + 1):
                choices = task.renderer.label_space(episode, k)
                shown = ShownEpisode.of(episode, k, config.builder_config)
                request = Request((), {}, RequestId(task.name, k, index), choices, shown)
                view = examples_of(request, self.name)
                target = task.renderer.render_target(episode, k)
                if k == shots:
                    stats.label_counts.update([target, *view.labels])
                if k:
                    repeated = twin_label(view, list(choices or ())) is None and target in view.labels
                    stats.repeats_demo_label[k] = stats.repeats_demo_label.get(k, False) or repeated
        log.debug(
            "shortcut: studied %d episodes of %s in %.1fs",
            PROBE_EPISODES,
            task.name,
            time.perf_counter() - started,
        )
        return stats

    def answer(self, request: Request) -> tuple[str, dict[str, Any]]:
        stats = self._statistics(request.rid.task)
        choices = list(request.choices or ())
        view = examples_of(request, self.name)
        twin = twin_label(view, choices)
        if twin is not None:
            return twin, {"rule": "clip identity", "candidates": 1}
        k = request.rid.shots
        rule = "label statistics"
        candidates = choices
        if k and not stats.repeats_demo_label.get(k, True):
            shown = set(view.labels)
            left = [c for c in choices if c not in shown]
            if left:
                candidates, rule = left, "elimination + label statistics"
        weights = [stats.label_counts.get(c, 0) + 1 for c in candidates]
        best = [c for c, w in zip(candidates, weights, strict=True) if w == max(weights)]
        # seeded by this task's statistics and the request only, so the draw is the same in any run composition
        rng = np.random.default_rng(
            stable_seed(
                self.seed, stats.digest(), request.content_key({"model": self.name, "version": VERSION})
            )
        )
        return best[int(rng.integers(len(best)))], {"rule": rule, "candidates": len(candidates)}

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            started = time.perf_counter()
            text, info = self.answer(request)
            out.append(Response(text=text, latency_s=time.perf_counter() - started, info={"shortcut": info}))
        return out
