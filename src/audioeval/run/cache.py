"""The response cache: SQLite in WAL mode, keyed by the content hash of a request (model identity, messages
with audio hashes, generation kwargs, label space). Responses are committed as they arrive, so a run killed
at any point resumes with only the missing requests. Several processes may share one cache file.

A spoken answer's audio is stored content-addressed in a `blobs` table (sha256 of the clip -> WAV bytes),
written in the same transaction as the response that refers to it; a response whose blob is missing or does
not decode to the clip it names is a miss, so the request is asked again rather than scored without audio."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from audioeval.audio.wav import read_pcm16_wav
from audioeval.data.destination import probe_writable
from audioeval.errors import UsageError
from audioeval.redact import holds_secret
from audioeval.types import AudioClip, SpokenAnswer

log = logging.getLogger("audioeval")

# the model, a reference model, a judge, the ASR of spoken answers
EntryKind = Literal["generate", "reference", "judge", "asr"]
SPOKEN_KEY = "__spoken__"  # the info field that holds a spoken answer's description (its audio is a blob)


@dataclass(frozen=True)
class CachedResponse:
    """What the cache holds for one request: the response text, the backend's info (truncations, ...) and the
    spoken answer with its audio, when the model answered in speech."""

    text: str
    info: dict[str, Any] = field(default_factory=dict)
    spoken: SpokenAnswer | None = None


@dataclass(frozen=True)
class CacheEntry:
    key: str  # Request.content_key(identity)
    kind: EntryKind
    text: str
    info: dict[str, Any] = field(default_factory=dict)
    spoken: SpokenAnswer | None = None


def describe_spoken(spoken: SpokenAnswer) -> dict[str, Any]:
    """A spoken answer without its samples: what the response row keeps (the audio goes to `blobs`)."""
    return {
        "audio": spoken.audio.sha256,
        "transcript": spoken.transcript,
        "time_to_first_audio_s": spoken.time_to_first_audio_s,
        "generation_s": spoken.generation_s,
    }


def restore_spoken(described: dict[str, Any], wav: bytes | None) -> SpokenAnswer | None:
    """The spoken answer back from its description and blob; None when the blob is missing or is not the
    clip the description names (a partial write, a damaged row)."""
    if wav is None or not isinstance(described, dict):
        return None
    try:  # checked as a reply is before it is cached: a row written before that check may hold a bad WAV
        pcm, rate = read_pcm16_wav(wav)
    except ValueError:
        return None
    clip = AudioClip.from_pcm16(pcm, rate)
    transcript, first, made = (
        described.get(k) for k in ("transcript", "time_to_first_audio_s", "generation_s")
    )
    if (
        clip.sha256 != described.get("audio")
        or not isinstance(transcript, str | None)
        or not isinstance(first, int | float | None)
        or not isinstance(made, int | float | None)
    ):
        return None
    return SpokenAnswer(clip, transcript, first, float(made or 0.0))


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
);
CREATE TABLE IF NOT EXISTS blobs (
    sha256 TEXT PRIMARY KEY,
    data BLOB NOT NULL
)
"""


def _is_damage(err: sqlite3.Error) -> bool:
    name = getattr(err, "sqlite_errorname", "")
    return name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or any(
        s in str(err) for s in ("malformed", "not a database")
    )


def _is_unwritable(err: sqlite3.Error) -> bool:
    """Read-only file or folder, full disk, I/O error: retrying does not help."""
    name = getattr(err, "sqlite_errorname", "")
    return name.startswith(("SQLITE_READONLY", "SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN")) or any(
        s in str(err) for s in ("readonly database", "disk is full", "disk I/O error")
    )


def _probe_write(db: sqlite3.Connection) -> None:
    """A write rolled back: SQLite opens a file it may not write read-only without a word, and every later
    write would fail mid-run."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS write_probe (x)")
    finally:
        db.execute("ROLLBACK")


def _is_busy(err: sqlite3.Error) -> bool:
    return getattr(err, "sqlite_errorname", "").startswith("SQLITE_BUSY") or "database is locked" in str(err)


def open_shared(path: Path, schema: str, patience_s: float = 60.0) -> sqlite3.Connection:
    """Open (creating) a store shared by processes: WAL, its schema and a rolled-back write. The processes of a
    launch open the same file at once, and switching a new file to WAL can answer "database is locked" without
    waiting on the busy timeout: that is retried, never taken for an unwritable store."""
    deadline = time.monotonic() + patience_s
    while True:
        db = sqlite3.connect(str(path), timeout=60.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(schema)
            _probe_write(db)
            return db
        except sqlite3.Error as err:
            db.close()
            if not _is_busy(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def damage_advice(path: Path, err: sqlite3.Error) -> str:
    return (
        f"the response cache {path} is damaged ({err}). Move it aside (mv {path} {path}.damaged, with its -wal "
        f"and -shm files) so the next run starts a fresh one; `sqlite3 {path}.damaged .recover | sqlite3 {path}` "
        "rescues the answers that are still readable."
    )


class ResponseCache:
    """A damaged file met mid-run does not stop the run: the cache is dropped with one warning and the run goes
    on, keeping every answer it computes for its own results (`damage` says what happened). So does a cache
    that can no longer be written (the disk filled up, the file was made read-only). One that cannot be written
    from the start is an error before any model work: `source` names where its folder came from."""

    def __init__(self, path: Path, source: str = "--cache_dir") -> None:
        self.path = Path(path)
        self.damage: str | None = None
        self._bad_rows_warned = self._secret_warned = False
        advice = "Point --cache_dir at a writable folder, or pass --no_cache (a killed run then starts over)."
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            probe_writable(self.path.parent)
        except OSError as err:
            raise UsageError(
                f"{source}: the response cache folder {self.path.parent} is not writable "
                f"({err.strerror or err}). {advice}"
            ) from err
        try:
            self._db = open_shared(self.path, _SCHEMA)
        except sqlite3.Error as err:
            if _is_damage(err):
                raise UsageError(f"{source}: {damage_advice(self.path, err)} Or pass --no_cache.") from err
            raise UsageError(
                f"{source}: cannot write the response cache {self.path} ({err}). {advice}"
            ) from err

    def _unwritable(self, err: sqlite3.Error) -> None:
        if self.damage is None:
            self.damage = (
                f"the response cache {self.path} could not be written ({err}): the answers from then on were "
                "not cached. Free space or make it writable again; a rerun asks only for what is missing."
            )
            log.warning("%s This run goes on without the cache.", self.damage)

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
            if _is_unwritable(err):
                self._unwritable(err)
                return
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
                cached = _cached(response, info)
                if cached is None:  # a damaged row is a miss: the request is asked again
                    self._bad_row(key)
                else:
                    found[key] = cached
        spoken = [k for k, c in found.items() if SPOKEN_KEY in c.info]
        if spoken:
            described = [found[k].info[SPOKEN_KEY] for k in spoken]
            blobs = self._blobs({str(d.get("audio")) for d in described if isinstance(d, dict)})
            for key in spoken:
                restored = _with_audio(found.pop(key), blobs)
                if restored is not None:
                    found[key] = restored
        return found

    def _bad_row(self, key: str) -> None:
        """A row that is not what this cache writes (edited, half-written by another program): asked again and
        replaced. Said once per run."""
        if not self._bad_rows_warned:
            self._bad_rows_warned = True
            log.warning(
                "the response cache %s holds rows that are not valid responses (the first: %s); they are asked "
                "again and replaced.",
                self.path,
                key[:16],
            )

    def _secret_held(self, count: int) -> None:
        """Answers that quote a key the harness holds (a server echoing its Authorization header) are not
        cached: a rerun asks again. Said once per run."""
        if not self._secret_warned:
            self._secret_warned = True
            log.warning(
                "%d answer(s) quoted an API key or token this run holds (masked in everything written); they "
                "were not cached, so a rerun asks for them again. Check what the endpoint sends back.",
                count,
            )

    def _blobs(self, shas: set[str]) -> dict[str, bytes]:
        wanted = sorted(shas)
        out: dict[str, bytes] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT sha256, data FROM blobs WHERE sha256 IN ({marks})", chunk)
            out.update((sha, bytes(data)) for sha, data in rows)
        return out

    def _put_many(self, entries: list[CacheEntry]) -> None:
        now = time.time()
        rows = [
            (e.key, e.kind, e.text, json.dumps(_row_info(e), sort_keys=True, default=str), now)
            for e in entries
        ]
        kept = [not (holds_secret(text) or holds_secret(info)) for _, _, text, info, _ in rows]
        if not all(kept):
            self._secret_held(kept.count(False))
            entries = [e for e, keep in zip(entries, kept, strict=True) if keep]
            rows = [r for r, keep in zip(rows, kept, strict=True) if keep]
        if not entries:
            return
        blobs = {e.spoken.audio.sha256: e.spoken.audio.wav_bytes() for e in entries if e.spoken is not None}
        for attempt in range(5):
            try:
                self._db.execute("BEGIN IMMEDIATE")
                # the audio first, in the same transaction: a response row never refers to a missing blob
                self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", list(blobs.items()))
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
                return
            except sqlite3.OperationalError as err:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                if attempt == 4 or _is_unwritable(err):
                    raise
                time.sleep(0.2 * (attempt + 1))

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        try:
            self._db.close()
        except sqlite3.Error:
            pass


def _cached(response: Any, info: Any) -> CachedResponse | None:
    """A response row as read back; None when it is not what the cache writes (text, a JSON object)."""
    try:
        described = json.loads(info)
    except (TypeError, ValueError, RecursionError):  # RecursionError: brackets nested too deep to read
        return None
    if not isinstance(response, str) or not isinstance(described, dict):
        return None
    if SPOKEN_KEY in described and not _is_spoken_description(described[SPOKEN_KEY]):
        return None
    return CachedResponse(response, described)


def _is_spoken_description(value: Any) -> bool:
    """What `describe_spoken` writes: the clip's sha256, the transcript (text or None) and two timings."""
    if not isinstance(value, dict) or not isinstance(value.get("audio"), str):
        return False
    numbers = [value.get("time_to_first_audio_s"), value.get("generation_s")]
    return isinstance(value.get("transcript"), str | None) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in numbers
    )


def _row_info(entry: CacheEntry) -> dict[str, Any]:
    if entry.spoken is None:
        return entry.info
    return {**entry.info, SPOKEN_KEY: describe_spoken(entry.spoken)}


def _with_audio(cached: CachedResponse, blobs: dict[str, bytes]) -> CachedResponse | None:
    """A cached spoken answer with its audio put back; None (a miss) when the audio is not there."""
    described = cached.info[SPOKEN_KEY]
    if not isinstance(described, dict):
        return None
    spoken = restore_spoken(described, blobs.get(str(described.get("audio"))))
    if spoken is None:
        return None
    return CachedResponse(cached.text, {k: v for k, v in cached.info.items() if k != SPOKEN_KEY}, spoken)


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
            self._answered[entry.key] = CachedResponse(entry.text, entry.info, entry.spoken)

    def count(self) -> int:
        return 0

    def close(self) -> None:
        self._answered.clear()
