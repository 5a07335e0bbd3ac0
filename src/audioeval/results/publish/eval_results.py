"""A run's headline numbers as the Hub's evaluation results of the model: YAML files in the model repository's
`.eval_results/` folder, in the format of https://huggingface.co/docs/hub/eval-results (one list of entries per
file; each entry `dataset: {id, task_id, revision}`, `value`, `date`, `source: {url, name}`, `notes`).

The headline numbers are the run's group aggregates (every metric a group averages, per k: what the
benchmark's papers put in their tables' average rows), its pooled group cells (per shot setting), and each
task's main metric per k. `dataset.id` is the Hub dataset holding the benchmark (`audioeval push`); `task_id`
names the number (`<group or task>-<metric>-<k>-shot`), a leaderboard id the benchmark's `eval.yaml` declares."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from audioeval.errors import UsageError, unknown_name_message
from audioeval.results.blocks import ShotBlock
from audioeval.results.compact_table import main_metric
from audioeval.results.outputs import safe_name
from audioeval.results.publish.reproduce import benchmark_of_task, benchmarks_of, group_members
from audioeval.results.record import RunRecord

_REPO_ID = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+")


def is_repo_id(text: str) -> bool:
    """`org/name`, as the Hub spells repository ids."""
    return bool(_REPO_ID.fullmatch(text))


FLAG = "--benchmark_repo"


@dataclass(frozen=True)
class BenchmarkRepo:
    repo_id: str
    revision: str | None = None  # the commit the run read its episodes from, when it read them from the Hub


@dataclass(frozen=True)
class Headline:
    benchmark: str
    name: str  # the group or task
    kind: str  # group, pooled or task
    metric: str
    shots: str  # `3-shot`, or a pooled setting such as `few-shot`
    value: float | None  # None where nothing could be scored (no judge, every request failed)
    n: int  # the samples (or pooled items) behind the value

    @property
    def task_id(self) -> str:
        return f"{self.name}-{self.metric}-{self.shots}"


def _metric_names(block: ShotBlock) -> list[str]:
    """The metrics of a block in its order, measured or not, failure rates left out."""
    return [m for m in block.metrics if not m.endswith("failure_rate")]


def headline_numbers(record: RunRecord) -> list[Headline]:
    """The headline numbers the run measured: what `.eval_results/` publishes."""
    return [h for h in headline_slots(record) if h.value is not None]


def headline_slots(record: RunRecord) -> list[Headline]:
    """Group aggregates and pooled cells (every metric), then each task's main metric, per k, measured or not:
    the numbers a run of these tasks reports, and so the leaderboard ids a benchmark's `eval.yaml` declares."""
    members = group_members(record)
    out: list[Headline] = []
    sections = [
        ("group", record.sections.groups),
        ("pooled", record.sections.pooled),
        ("task", {t: v for t, v in record.sections.results.items() if t in record.configs}),
    ]
    for kind, section in sections:
        for name, per_k in section.items():
            benchmarks = benchmarks_of(record, name, members)
            if len(benchmarks) != 1:
                continue  # a group across benchmarks has no one benchmark dataset to be listed on
            benchmark = next(iter(benchmarks))
            main = main_metric(per_k)  # a task's main metric: the one the run's table shows
            for shots, block in per_k.items():
                metrics = _metric_names(block)
                for metric in ([main] if main in block.metrics else []) if kind == "task" else metrics:
                    out.append(Headline(benchmark, name, kind, metric, shots, block.value(metric), block.n))
    return out


def run_benchmarks(record: RunRecord) -> list[str]:
    return list(dict.fromkeys(benchmark_of_task(record, t) for t in record.configs))


def resolve_benchmark_repos(record: RunRecord, flag: str | None, model_repo: str) -> dict[str, BenchmarkRepo]:
    """The Hub dataset of every benchmark of the run: from --benchmark_repo, else the one the run read its
    episodes from (`--task_args dataset=ORG/NAME`); one line naming what is missing otherwise."""
    benchmarks = run_benchmarks(record)
    given = parse_benchmark_repos(flag, benchmarks) if flag else {}
    recorded: dict[str, BenchmarkRepo] = {}
    for task, config in record.configs.items():
        data = config.dataset  # what the run read its episodes from (`--task_args dataset=`), if it read any
        if data is not None and data.get("kind") == "hub" and data.get("repo_id"):
            recorded.setdefault(
                benchmark_of_task(record, task), BenchmarkRepo(data["repo_id"], data.get("revision"))
            )
    repos: dict[str, BenchmarkRepo] = {}
    for b in benchmarks:
        if b in given:
            same = recorded.get(b)
            repos[b] = (
                same if same and same.repo_id == given[b].repo_id and not given[b].revision else given[b]
            )
        elif b in recorded:
            repos[b] = recorded[b]
    missing = [b for b in benchmarks if b not in repos]
    if missing:
        names = ",".join(f"{b}=ORG/NAME" for b in missing)
        raise UsageError(
            f"--model_repo {model_repo}: each evaluation result names the Hub dataset that holds its benchmark, and "
            f"this run does not say which repository holds {', '.join(missing)} (its episodes were generated, "
            f"not read with --task_args dataset=ORG/NAME); pass {FLAG} {names}, the repository you uploaded "
            "it to with `audioeval push`."
        )
    return repos


def parse_benchmark_repos(text: str, benchmarks: list[str]) -> dict[str, BenchmarkRepo]:
    """`ORG/NAME` (a run of one benchmark) or `BENCHMARK=ORG/NAME,...`, each optionally `@REVISION`."""
    out: dict[str, BenchmarkRepo] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        key, _, spec = item.rpartition("=")
        if not key:
            if len(benchmarks) != 1:
                raise UsageError(
                    f"{FLAG} {item}: this run covers several benchmarks ({', '.join(benchmarks)}); name each: "
                    f"{FLAG} " + ",".join(f"{b}=ORG/NAME" for b in benchmarks) + "."
                )
            key = benchmarks[0]
        if key not in benchmarks:
            raise UsageError(f"{FLAG}: " + unknown_name_message("benchmark of this run", key, benchmarks))
        repo_id, _, revision = spec.partition("@")
        if not is_repo_id(repo_id):
            raise UsageError(f"{FLAG} {item}: expected ORG/NAME of a Hub dataset, got {repo_id!r}.")
        out[key] = BenchmarkRepo(repo_id, revision or None)
    return out


def iso_date(text: str) -> str:
    """results.json's `date` (2026-01-15T10:30:00+0000) as ISO-8601 with a colon in the offset."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").isoformat()
    except ValueError:
        return text


def _notes(headline: Headline, record: RunRecord) -> str:
    limit = f", limit {record.limit} episodes per task" if record.limit is not None else ""
    version = record.versions.get("audioeval")
    return (
        f"{headline.metric} of {headline.kind} {headline.name} at {headline.shots} ({headline.n} samples; "
        f"seed {record.seed}{limit}); audioeval {version}"
    )


def entries(
    record: RunRecord, headlines: list[Headline], repo: BenchmarkRepo, source_url: str
) -> list[dict[str, Any]]:
    """The entries of one benchmark, field names and nesting as the Hub's documentation gives them."""
    out = []
    for h in headlines:
        dataset: dict[str, Any] = {"id": repo.repo_id, "task_id": h.task_id}
        if repo.revision:
            dataset["revision"] = repo.revision
        out.append(
            {
                "dataset": dataset,
                "value": h.value,  # as results.json has it: YAML writes a float's shortest exact form
                "date": iso_date(record.date),
                "source": {"url": source_url, "name": "audioeval run details"},
                "notes": _notes(h, record),
            }
        )
    return out


def eval_results_files(
    record: RunRecord, repos: dict[str, BenchmarkRepo], source_url: str, run_name: str
) -> dict[str, str]:
    """`.eval_results/<file>.yaml` -> its text, one file per benchmark of the run."""
    by_benchmark: dict[str, list[Headline]] = {}
    for h in headline_numbers(record):
        by_benchmark.setdefault(h.benchmark, []).append(h)
    files = {}
    for benchmark, headlines in by_benchmark.items():
        path = f".eval_results/audioeval_{safe_name(benchmark)}_{safe_name(run_name)}.yaml"
        data = entries(record, headlines, repos[benchmark], source_url)
        files[path] = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
    return files
