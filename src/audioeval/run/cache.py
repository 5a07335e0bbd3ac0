"""The response cache: SQLite in WAL mode, keyed by the content hash of a request (model identity, messages
with audio hashes, generation kwargs, label space). Responses are committed as they arrive, so a run killed
at any point resumes with only the missing requests. Several processes may share one cache file."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from audioeval.errors import UsageError

log = logging.getLogger("audioeval")

EntryKind = Literal["generate", "reference", "judge"]  # the model, a reference model, a judge


@dataclass(frozen=True)
class CachedResponse:
    """What the cache holds for one request: the response text and the backend's info (truncations, ...)."""

    text: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheEntry:
    key: str  # Request.content_key(identity)
    kind: EntryKind
    text: str
    info: dict[str, Any] = field(default_factory=dict)


class ResponseStore(Protocol):
    """What the serving path needs from a cache: look up by content key, store as responses arrive."""

    @property
    def path(self) -> Path | None: ...

    @property
    def damage(self) -> str | None:
        """Set when the store was found damaged mid-run and dropped."""

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]: ...

    def put_many(self, entries: list[CacheEntry]) -> None:
        """Committed before returning, so a kill right after loses nothing."""

    def count(self) -> int: ...

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    info TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def _is_damage(err: sqlite3.Error) -> bool:
    name = getattr(err, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(err) for s in ("malformed", "not a database")
    )


def damage_advice(path: Path, err: sqlite3.Error) -> str:
    return (
        f"the response cache {path} is damaged ({err}). Move it aside (mv {path} {path}.damaged, with its -wal "
        f"and -shm files) so the next run starts a fresh one; `sqlite3 {path}.damaged .recover | sqlite3 {path}` "
        "rescues the answers that are still readable."
    )


class ResponseCache:
    """A damaged file met mid-run does not stop the run: the cache is dropped with one warning and the run goes
    on, keeping every answer it computes for its own results (`damage` says what happened)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.damage: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute(_SCHEMA)
        except sqlite3.Error as err:
            if _is_damage(err):
                raise UsageError(f"--cache_dir: {damage_advice(self.path, err)} Or pass --no_cache.") from err
            raise UsageError(
                f"--cache_dir: cannot open the response cache {self.path}: {err}. "
                "Point --cache_dir at a writable folder or pass --no_cache."
            ) from err
        except OSError as err:
            raise UsageError(
                f"--cache_dir: cannot open the response cache {self.path}: {err}. "
                "Point --cache_dir at a writable folder or pass --no_cache."
            ) from err

    def _damaged(self, err: sqlite3.Error) -> None:
        if self.damage is None:
            self.damage = damage_advice(self.path, err)
            log.warning(
                "%s This run goes on without the cache: the answers it computes are kept for its results but "
                "not cached.",
                self.damage,
            )

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
        if self.damage is not None:
            return {}
        try:
            return self._get_many(keys)
        except sqlite3.DatabaseError as err:
            if not _is_damage(err):
                raise
            self._damaged(err)
            return {}

    def put_many(self, entries: list[CacheEntry]) -> None:
        """Committed before returning."""
        if self.damage is not None:
            return
        try:
            self._put_many(entries)
        except sqlite3.DatabaseError as err:
            if not _is_damage(err):
                raise
            self._damaged(err)

    def _get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
        found: dict[str, CachedResponse] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, response, info FROM responses WHERE key IN ({marks})", chunk
            )
            for key, response, info in rows:
                found[key] = CachedResponse(response, json.loads(info))
        return found

    def _put_many(self, entries: list[CacheEntry]) -> None:
        if not entries:
            return
        now = time.time()
        rows = [
            (e.key, e.kind, e.text, json.dumps(e.info, sort_keys=True, default=str), now) for e in entries
        ]
        for attempt in range(5):
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
                return
            except sqlite3.OperationalError:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error:
            pass


class NoCache:
    """Stand-in when --no_cache is given: nothing is read from or written to disk. The run's own responses are
    kept in memory, so a request identical to one answered earlier in the run gets that answer, as it would
    if the first were still in flight: what is sent, and so every answer, does not depend on timing."""

    path: Path | None = None
    damage: str | None = None

    def __init__(self) -> None:
        self._answered: dict[str, CachedResponse] = {}

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
        return {k: self._answered[k] for k in keys if k in self._answered}

    def put_many(self, entries: list[CacheEntry]) -> None:
        for entry in entries:
            self._answered[entry.key] = CachedResponse(entry.text, entry.info)

    def count(self) -> int:
        return 0

    def close(self) -> None:
        self._answered.clear()
