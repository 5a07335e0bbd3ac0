"""What a rerun needs of an episode without synthesizing it again.

A rerun on the same cache finds every response in the response store, yet each request's key is a hash of
its audio, so the episode would have to be synthesized again just to look its answers up. This store keeps,
per task and episode, the requests as the run saw them without their audio (the described messages, with
the clips' hashes; the label space; the target; the sample's record). When every request of an episode has
its answers in the response store, for the model and for every reference model, the episode is served from
here and not synthesized; otherwise it is synthesized as usual. Nothing else changes: the keys, the cached
answers and so the results and samples are those of a rerun that synthesized everything.

A task's records are keyed on everything its episodes are a function of: the resolved task configuration
(builder, seed, parameters, templates), its shots, generation settings and robustness condition, and the code
and libraries that synthesize them (a digest of the package's files, numpy's, scipy's and eSpeak NG's
versions). Tasks whose episodes read local files (a corpus folder, `data_dir`, stored datasets) are never
kept: their files could change under the same configuration. Judged tasks are not served from here (judges
read the episode itself)."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from audioeval.data.builders import EpisodeBuilder
from audioeval.errors import ModelError
from audioeval.redact import redact_args
from audioeval.resources import resource_root
from audioeval.run.cache import open_shared
from audioeval.run.prepared import PreparedTask
from audioeval.types import Request, RequestId

log = logging.getLogger("audioeval")

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_LIBRARIES = ("numpy", "scipy", "espeakng-loader")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS episodes (
    task_key TEXT NOT NULL,
    episode INTEGER NOT NULL,
    requests TEXT NOT NULL,
    PRIMARY KEY (task_key, episode)
)
"""


@dataclass(eq=False)
class StoredRequest(Request):
    """A request read back from the store: its messages as described (no audio), never sent to a backend."""

    described: list[dict[str, Any]] = field(default_factory=list)
    stored_audio_seconds: float = 0.0

    @property
    def audio_seconds(self) -> float:
        return self.stored_audio_seconds

    def describe(self) -> list[dict[str, Any]]:
        return self.described

    def for_backend(self) -> Request:
        raise ModelError(
            "the response cache lost answers it had when this task started (was it moved or damaged mid-run?); "
            "run the same command again: the missing answers are then computed."
        )


@cache
def code_digest() -> str:
    """The package's files (code, task configs, templates, builders) and the synthesizing libraries' versions."""
    h = hashlib.sha256()
    roots = dict.fromkeys([_PACKAGE_DIR, *(resource_root() / d for d in ("tasks", "datasets_builders"))])
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in _LIBRARIES:
        try:
            h.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=none".encode())
    return h.hexdigest()


def _reads_local_files(task: PreparedTask) -> bool:
    if not isinstance(task.builder, EpisodeBuilder):
        return True  # stored data (`dataset=`)
    about = type(task.builder).ABOUT
    if about is None:
        return True  # nothing says which arguments name files: assume some do
    file_args = {
        "data_dir",
        "data_files",
        *about.path_args,
        *(a for c in about.corpora for a in c.builder_args),
    }
    return any(task.config.builder_kwargs.get(arg) for arg in file_args)


def task_key(task: PreparedTask) -> str | None:
    """What the task's episodes and requests are a function of; None when they must not be kept."""
    if _reads_local_files(task):
        return None
    augment = task.augment.record() if task.augment is not None else None  # levels and target too
    identity = [task.config.content_hash(), task.shots, task.gen_kwargs, augment, code_digest()]
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def describe_pairs(pairs: list[tuple[Request, str]]) -> list[dict[str, Any]] | None:
    """One episode's (request, target) pairs as the store keeps them; None when they do not come back from
    JSON exactly as they are (a tuple or a numpy number in the metadata), so they are not kept."""
    records = [
        {
            "k": request.rid.shots,
            "messages": request.describe(),
            "audio_seconds": request.audio_seconds,
            "gen_kwargs": redact_args(request.gen_kwargs),  # the task key holds them; a secret stays out
            "choices": list(request.choices) if request.choices is not None else None,
            "sample_info": request.info["sample_info"],
            "target": target,
        }
        for request, target in pairs
    ]
    try:
        return records if json.loads(json.dumps(records)) == records else None
    except (TypeError, ValueError):
        return None


def stored_pairs(task: PreparedTask, index: int, records: list[dict[str, Any]]) -> list[tuple[Request, str]]:
    """The (request, target) pairs of one stored episode."""
    pairs: list[tuple[Request, str]] = []
    for r in records:
        request = StoredRequest(
            messages=(),
            gen_kwargs=task.gen_kwargs,  # what the task key was made of (the stored copy is masked)
            rid=RequestId(task.config.name, int(r["k"]), index),
            choices=tuple(r["choices"]) if r["choices"] is not None else None,
            info={"sample_info": r["sample_info"]},
            described=r["messages"],
            stored_audio_seconds=float(r["audio_seconds"]),
        )
        pairs.append((request, r["target"]))
    return pairs


class EpisodeStore:
    """SQLite next to the response cache. A store that cannot be opened or read is skipped with one warning:
    the run then synthesizes every episode, as it would without it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = open_shared(self.path, _SCHEMA)
        except (sqlite3.Error, OSError) as err:
            self._give_up(err)

    def _give_up(self, err: Exception) -> None:
        log.warning("the episode store %s is unusable (%s): every episode is synthesized.", self.path, err)
        if self._db is not None:
            self._db.close()
        self._db = None

    def get_many(self, key: str, indices: list[int]) -> dict[int, list[dict[str, Any]]]:
        if self._db is None:
            return {}
        found: dict[int, list[dict[str, Any]]] = {}
        try:
            for start in range(0, len(indices), 500):
                chunk = indices[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT episode, requests FROM episodes WHERE task_key = ? AND episode IN ({marks})",
                    [key, *chunk],
                )
                found.update({int(i): json.loads(text) for i, text in rows})
        except (sqlite3.Error, ValueError) as err:
            self._give_up(err)
            return {}
        return found

    def put_many(self, key: str, episodes: dict[int, list[dict[str, Any]]]) -> None:
        if self._db is None or not episodes:
            return
        rows = [(key, i, json.dumps(r, sort_keys=True)) for i, r in sorted(episodes.items())]
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT OR REPLACE INTO episodes VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")
        except sqlite3.Error as err:
            self._give_up(err)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
