"""`dsp-oracle`: task-aware signal processing for AudioICL-Bench that reads each answer from the audio, with
every free constant calibrated on what the prompt shows (the demos, the Morse bank, the labelled anchors).

It shows which tasks the signal makes solvable from the demonstrations. One method per task family
(`METHODS`); asked for any other task it refuses before any work, naming the tasks it supports. When a method
has nothing to calibrate on (k=0 for the tasks that need demos) or its analysis reaches no answer, the model
draws uniformly from the task's label space, seeded per request like `chance`, and says so in the response's
info (`samples_<task>.jsonl`, field `response_info.dsp_oracle.fallback`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.anomaly import AnomalyMethod
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.arithmetic import ArithmeticMethod
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.count import CountMethod
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.length import LengthMethod
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import AnalysisCache, Method
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.morse import MorseMethod
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.remap import RemapMethod
from audioeval.errors import ModelError
from audioeval.models.base import Model, ModelTask
from audioeval.seeds import stable_seed
from audioeval.types import Request, Response, ShownEpisode

METHOD_CLASSES: tuple[type[Method], ...] = (
    CountMethod,
    LengthMethod,
    ArithmeticMethod,
    RemapMethod,
    MorseMethod,
    AnomalyMethod,
)
#: AudioICL-Bench builder config -> method class
METHODS: dict[str, type[Method]] = {task: cls for cls in METHOD_CLASSES for task in cls.tasks}
#: bump when a method changes what it answers, so cached responses of the old version are not reused
VERSION = 1
NO_DEMOS = "k=0: no demonstrations to calibrate on; uniform draw from the label space"

log = logging.getLogger("audioeval")


def _config_of(task_name: str, builder_config: str | None) -> str | None:
    if builder_config in METHODS:
        return builder_config
    prefix = "audioicl_"
    if task_name.startswith(prefix) and task_name[len(prefix) :] in METHODS:
        return task_name[len(prefix) :]
    return None


class DspOracleModel(Model):
    name = "dsp-oracle"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache = AnalysisCache()
        self.methods = {task: cls(self.cache) for task, cls in METHODS.items()}

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": self.name, "version": VERSION, "seed": self.seed}

    @classmethod
    def supported_tasks(cls) -> list[str]:
        return sorted([f"audioicl_{t}" for t in METHODS] + list(METHODS))

    @classmethod
    def check_task(cls, task_name: str, builder_config: str | None) -> None:
        if _config_of(task_name, builder_config) is None:
            tasks = ", ".join(f"audioicl_{t}" for t in METHODS)
            raise ModelError(
                f"model 'dsp-oracle' has no method for task {task_name!r}"
                + (f" (builder config {builder_config!r})" if builder_config else "")
                + f". It supports the AudioICL-Bench tasks: {tasks}. Pick one of those (or the groups "
                "audioicl_bench, audioicl_ablation), or a model without task-specific methods such as knn-icl."
            )

    @classmethod
    def check_request(cls, request: Request, source: str) -> None:
        builder_config = request.shown.builder_config if request.shown is not None else None
        config = _config_of(request.rid.task, builder_config)
        if config is None:
            cls.check_task(request.rid.task, builder_config)
            return
        if request.shown is None:
            raise ModelError(f"{source}: model 'dsp-oracle' needs the episode structure in its requests.")
        if request.rid.shots == 0 and METHODS[config].needs_demos and not request.choices:
            raise ModelError(
                f"{source}: model 'dsp-oracle' answers k=0 of {request.rid.task!r} with a draw from the label "
                "space, but the task declares none; add `label_space:` or drop k=0 (--num_fewshot)."
            )

    def prepare(self, tasks: Sequence[ModelTask]) -> None:
        drawn = [
            t.name
            for t in tasks
            if 0 in t.shots and METHODS[_config_of(t.name, t.config.builder_config) or ""].needs_demos
        ]
        if drawn:
            log.info(
                "dsp-oracle: k=0 of %s is answered by a uniform draw from the label space (no demos to calibrate "
                "on); with --log_samples each sample's response_info.dsp_oracle says how its answer was reached.",
                ", ".join(drawn),
            )

    def _draw(self, request: Request) -> str:
        rng = np.random.default_rng(stable_seed(self.seed, request.content_key(self.identity)))
        choices = list(request.choices or ())
        if not choices:
            raise ModelError(
                f"model 'dsp-oracle', task {request.rid.task!r}: no answer from the signal and no label space "
                "to draw from; add `label_space:` to the task."
            )
        return choices[int(rng.integers(len(choices)))]

    @staticmethod
    def _view(request: Request, config: str) -> ShownEpisode:
        shown = request.shown
        if shown is None:
            raise ModelError(
                f"model 'dsp-oracle', task {request.rid.task!r}: the request carries no episode structure "
                "(Request.shown); run it through the harness on an AudioICL-Bench task."
            )
        if len(shown.demos) < shown.k:
            raise ModelError(
                f"model 'dsp-oracle', task {request.rid.task!r}: k={shown.k} but the episode carries "
                f"{len(shown.demos)} demos."
            )
        if not shown.query.clips:
            raise ModelError(f"model 'dsp-oracle', task {request.rid.task!r}: the query has no audio clip.")
        return dataclasses.replace(shown, builder_config=config)

    def answer(self, request: Request) -> tuple[str, dict[str, Any]]:
        builder_config = request.shown.builder_config if request.shown is not None else None
        config = _config_of(request.rid.task, builder_config)
        if config is None:
            self.check_task(request.rid.task, builder_config)
            raise AssertionError("unreachable")
        method = self.methods[config]
        details: dict[str, Any] = {"method": method.name}
        if request.rid.shots == 0 and method.needs_demos:
            return self._draw(request), {**details, "fallback": NO_DEMOS}
        prediction = method.predict(self._view(request, config))
        details.update(prediction.info)
        if prediction.answer is None:
            reason = f"{prediction.reason}; uniform draw from the label space"
            return self._draw(request), {**details, "fallback": reason}
        return prediction.answer, details

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            start = time.perf_counter()
            text, details = self.answer(request)
            out.append(
                Response(text=text, latency_s=time.perf_counter() - start, info={"dsp_oracle": details})
            )
        return out
