"""The response cache: SQLite in WAL mode, keyed by the content hash of a request (model identity, messages
with audio hashes, generation kwargs, label space). Responses are committed as they arrive, so a run killed
at any point resumes with only the missing requests. Several processes may share one cache file."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from audioeval.errors import UsageError

EntryKind = Literal["generate", "judge"]


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

    path: Path | None

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


class ResponseCache:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise UsageError(
                f"--cache_dir: cannot open the response cache {self.path}: {err}. "
                "Point --cache_dir at a writable folder or pass --no_cache."
            ) from err

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
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

    def put_many(self, entries: list[CacheEntry]) -> None:
        """Committed before returning."""
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
    """Stand-in when --no_cache is given."""

    path = None

    def get_many(self, keys: list[str]) -> dict[str, CachedResponse]:
        return {}

    def put_many(self, entries: list[CacheEntry]) -> None:
        return None

    def count(self) -> int:
        return 0

    def close(self) -> None:
        return None
