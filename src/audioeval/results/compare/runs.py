"""The runs `audioeval compare` reads: each run folder's record and, when it logged them, its samples as score
rows with what each sample was asked (to check that two runs saw the same episodes) and its cluster."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from audioeval.errors import UsageError
from audioeval.results.record import RunRecord
from audioeval.results.run_files import RunFiles, read_run, sample_lines
from audioeval.results.sample_record import SampleRecord
from audioeval.results.score_rows import ScoreRow, facet_values, score_arrays

SampleKey = tuple[int, int]  # (episode, k)


@dataclass
class AtK:
    """A task's logged samples at one k, in episode order: the episodes, the score columns asked for (NaN
    where a sample has no value) and whether the model failed to answer."""

    episodes: np.ndarray
    columns: dict[str, np.ndarray]
    failed: np.ndarray


@dataclass
class LoggedTask:
    """One task's logged samples: score rows in file order, and per (episode, k) a digest of the episode as
    the model was shown it (its clips and target, in any order) and of the whole request (text included)."""

    rows: list[ScoreRow] = field(default_factory=list)
    episodes: dict[SampleKey, bytes] = field(default_factory=dict)
    requests: dict[SampleKey, bytes] = field(default_factory=dict)
    clusters: dict[int, str] = field(default_factory=dict)  # episode -> its cluster (the task's `cluster:`)
    _at: dict[tuple[int, tuple[str, ...]], AtK] = field(default_factory=dict, repr=False)

    def at(self, k: int, names: tuple[str, ...]) -> AtK:
        """The samples at k (made once per k and columns)."""
        if (k, names) not in self._at:
            columns, rows = score_arrays(self.rows, k, list(names))
            episodes = np.array([r.episode for r in rows], dtype=np.int64)
            failed = np.array([r.error for r in rows], dtype=bool)
            self._at[(k, names)] = AtK(episodes, columns, failed)
        return self._at[(k, names)]


@dataclass
class Run:
    label: str
    path: Path
    record: RunRecord
    logged: dict[str, LoggedTask] | None  # None: the run was made without --log_samples


def load_runs(paths: list[str]) -> list[Run]:
    """Each run folder in the order given; a folder that is not a finished run is one error naming it."""
    runs = []
    for path in paths:
        files = read_run(path)
        if files.record is None:
            raise UsageError(
                f"{files.path}: this run did not finish (no results.json; {_first_line(files.incomplete)}). "
                "Compare finished runs: rerun the command to complete it (answers come from the response cache)."
            )
        logged = _logged(files, files.record) if files.sample_files else None
        runs.append(Run(files.record.model.label, files.path, files.record, logged))
    _distinct_labels(runs)
    return runs


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if text and text.strip() else "INCOMPLETE"


def _distinct_labels(runs: list[Run]) -> None:
    """Runs of the same model (two checkpoints named alike, a rerun) are told apart by their folder."""
    counts = Counter(run.label for run in runs)
    for run in runs:
        if counts[run.label] > 1:
            run.label = f"{run.label} [{run.path.name}]"


def _logged(files: RunFiles, record: RunRecord) -> dict[str, LoggedTask]:
    out: dict[str, LoggedTask] = {}
    for task, paths in files.sample_files.items():
        config = record.configs.get(task)
        cluster = config.config.get("cluster") if config else None
        logged = out.setdefault(task, LoggedTask())
        for path in paths:
            for _number, _offset, sample in sample_lines(path):
                _add(logged, sample, cluster)
    return out


def _add(logged: LoggedTask, sample: SampleRecord, cluster: str | None) -> None:
    key = (sample.episode, sample.shots)
    if key in logged.episodes:
        return  # a sample logged twice (a resumed partial file) counts once
    logged.rows.append(
        ScoreRow(
            sample.episode,
            sample.shots,
            sample.scores,
            sample.parse_failure,
            sample.failed,
            sample.audio_seconds,
            sample.error,
        )
    )
    clips, request = [], []
    for message in sample.messages or []:
        request.append("\x1e" + message["role"])
        for part in message["content"]:
            if part["type"] == "audio":
                clips.append(part["sha256"])
                request.append("\x1fa" + part["sha256"])
            else:
                request.append("\x1ft" + part["text"])
    logged.episodes[key] = _digest([sample.target, *sorted(clips)])
    logged.requests[key] = _digest(request)
    if cluster and sample.episode not in logged.clusters:
        value = facet_values(sample.metadata, (cluster,)).get(cluster)
        if value is not None:
            logged.clusters[sample.episode] = value


def _digest(parts: list[str]) -> bytes:
    return hashlib.sha1("\x1d".join(parts).encode()).digest()
