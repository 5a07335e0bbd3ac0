"""Scoring one task's responses: parse -> evaluate metric modules -> per-sample scores.

Metric modules are Hugging Face `evaluate` modules in metrics/<name>/<name>.py. Their `_compute` returns a
dict; every value that is a list with one number (or None for "not scorable") per prediction is a
per-sample score. The harness aggregates those itself (stats.py) so it can bootstrap over episodes.

Optional keyword arguments a metric's `_compute` may declare, filled in by the harness:
`responses` (raw model text), `parse_failures` (bools), `sample_info` (per-sample dicts with the task,
k, episode index and episode metadata), `judgments` (per-sample judge verdict lists, see judges/) and
`judge_ids` (the judges' ids in `--judge` order, given whenever judgments are).
"""

from __future__ import annotations

import fnmatch
import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from audioeval.config.parsers import get_parser
from audioeval.config.task import TaskConfig
from audioeval.errors import ConfigError, unknown_name_message
from audioeval.resources import metrics_dir
from audioeval.results.stats import Aggregation

HARNESS_SCORES = ("parse_failure_rate",)
#: one sample's verdicts: role -> judge id -> {"value", "values", "raw", "error", "out_of_range"}
Judgments = dict[str, dict[str, dict[str, Any]]]
OPTIONAL_INPUTS = ("responses", "parse_failures", "sample_info", "judgments", "judge_ids")


def _metric_path(name: str, task_dir: Path) -> Path:
    if "/" in name or name.startswith("."):
        path = (task_dir / name).resolve()
    else:
        path = metrics_dir() / name
    if not (path / f"{path.name}.py").is_file():
        root = metrics_dir()
        known = [p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file()] if root.is_dir() else []
        raise ConfigError(
            unknown_name_message("metric", name, known, f"Metric modules live in {root}/<name>/<name>.py.")
        )
    return path


@cache
def load_metric(path: Path) -> Any:
    return import_evaluate().load(str(path), keep_in_memory=True)


def import_evaluate() -> Any:
    """`import evaluate`, without the seconds its package init spends on what only its Evaluator classes use
    (audioeval never does): transformers and its pipelines, and scipy.stats (half a second, for their
    bootstrap). Those imports are masked meanwhile, and evaluate then marks those classes unavailable. If
    evaluate cannot be imported that way, it is imported plainly. The masks hold for the whole process while
    they last: the run imports evaluate while preparing its tasks, before it starts any thread of its own."""
    if "evaluate" in sys.modules:
        return sys.modules["evaluate"]
    # transformers itself when nothing imported it yet (an API run), else only its pipelines
    masked = [m for m in ("transformers", "transformers.pipelines") if m not in sys.modules][:1]
    masked += [m for m in ("scipy.stats",) if m not in sys.modules]
    for name in masked:
        sys.modules[name] = None  # type: ignore[assignment]  # importing it raises ImportError
    try:
        import evaluate
    except Exception:  # noqa: BLE001 - another evaluate or transformers version: the plain, slow way below
        evaluate = None
    finally:
        for name in masked:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
    if evaluate is None:
        for name in [m for m in sys.modules if m == "evaluate" or m.startswith("evaluate.")]:
            del sys.modules[name]
        import evaluate
    return evaluate


@dataclass
class SampleToScore:
    response: str
    target: str
    info: dict[str, Any]


class TaskScorer:
    def __init__(self, task: TaskConfig) -> None:
        self.task = task
        self.parse: Callable[..., str | None] = get_parser(
            task.parser["name"], task.parser["args"], source=str(task.path), base_dir=task.dir_of("parser")
        )
        # A parser may declare `sample_info` to read per-sample facts (e.g. which format to undo).
        self.parse_takes_info = "sample_info" in inspect.signature(self.parse).parameters
        self.metrics = []
        self.metric_files: list[Path] = []  # for the preflight import check (requirements.py)
        for spec in task.metrics:
            try:
                path = _metric_path(spec["name"], task.dir_of("metrics"))
            except ConfigError as err:
                raise ConfigError(f"{task.path}: {err}") from err
            module = load_metric(path)
            accepted = set(inspect.signature(module._compute).parameters)
            self.metrics.append((spec, module, accepted))
            self.metric_files.append(path / f"{path.name}.py")

    @property
    def parser_module(self) -> str:
        return getattr(self.parse, "func", self.parse).__module__

    def score(
        self,
        samples: list[SampleToScore],
        judgments: list[Judgments] | None = None,
        judge_ids: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Per-sample records: {"prediction", "parse_failure", "scores": {name: float | None}}."""
        if not samples:
            return []
        predictions, failures = [], []
        for s in samples:
            if s.response is None:
                pred = None
            elif self.parse_takes_info:
                pred = self.parse(s.response, sample_info=s.info)
            else:
                pred = self.parse(s.response)
            failures.append(pred is None)
            predictions.append("" if pred is None else str(pred))
        per_sample: list[dict[str, float | None]] = [{"parse_failure_rate": float(f)} for f in failures]
        optional = {
            "responses": [s.response for s in samples],
            "parse_failures": failures,
            "sample_info": [s.info for s in samples],
            "judgments": judgments,
            "judge_ids": judge_ids,
        }
        for spec, module, accepted in self.metrics:
            kwargs = dict(spec["args"])
            for key in OPTIONAL_INPUTS:
                if key in accepted and optional[key] is not None:
                    kwargs[key] = optional[key]
            result = module.compute(predictions=predictions, references=[s.target for s in samples], **kwargs)
            for key, value in (result or {}).items():
                if isinstance(value, list) and len(value) == len(samples):
                    for record, v in zip(per_sample, value, strict=True):
                        record[key] = _as_score(v, spec["name"], key)
        return [
            {"prediction": None if f else p, "parse_failure": f, "scores": scores}
            for p, f, scores in zip(predictions, failures, per_sample, strict=True)
        ]

    def aggregations(self, score_names: list[str]) -> dict[str, Aggregation]:
        return aggregations(self.task.aggregation, score_names)


def aggregations(declared: dict[str, Any], score_names: list[str]) -> dict[str, Aggregation]:
    """The reported metrics of a task whose YAML declares `aggregation: declared`, in order: declared
    aggregations, every other per-sample score (by the first glob key that matches it, e.g. `score@*`, else
    as a mean), and the harness's own parse_failure_rate last. Columns that only feed another aggregation
    are not reported."""
    exact = {k: v for k, v in declared.items() if not _is_glob(k)}
    globs = [(k, v) for k, v in declared.items() if _is_glob(k)]
    out = {k: Aggregation.from_spec(k, v) for k, v in exact.items()}
    for name in score_names:
        if name not in out and name not in HARNESS_SCORES:
            spec = next((v for k, v in globs if fnmatch.fnmatchcase(name, k)), "mean")
            out[name] = Aggregation.from_spec(name, spec)
    helpers = {i for a in out.values() for i in a.helper_inputs}
    out = {name: agg for name, agg in out.items() if name in exact or name not in helpers}
    for name in HARNESS_SCORES:
        if name in score_names and name not in out:
            out[name] = Aggregation.from_spec(name, "mean")
    return out


def _is_glob(key: str) -> bool:
    return any(c in key for c in "*?[")


def _as_score(value: Any, metric: str, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else float(value)
    raise ConfigError(f"metric {metric!r} returned a non-numeric per-sample value for {key!r}: {value!r}.")
