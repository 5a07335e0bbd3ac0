"""Episodes synthesized once per configuration, reused by every later run on the same cache, whatever the model.

An episode is a pure function of (builder configuration, seed, index), so it is kept, not remade: per
configuration and index, one row holding the episode as JSON with each audio clip replaced by a reference
(`{"__clip__": i}`, in the order the clips are first met, so clip objects shared inside the episode stay
shared), and beside it the clips' audio, content-addressed by the SHA-256 of their PCM16 samples and
compressed (`encode_clip`: 16-bit samples, first differences, low and high bytes apart, each plane deflated,
run-length coded or kept as it is by its byte entropy: 2-80% of the PCM's size, about half on average for the
built-in procedural audio, twice as fast as deflating everything for 3% more bytes). A clip read back is a
`StoredClip`: its identity and length are known at once, its samples are read only when something needs them
(a request that is not answered from the response cache), so a rerun whose answers are all cached decodes no
audio at all.

Keys (`episode_key`): the builder and its file, its config and arguments (seed included), the robustness
condition, and a digest of audioeval's files and the synthesizing libraries; not the templates, shots or
generation settings, which are applied to the episode afterwards. Tasks whose episodes read local files (a
corpus folder, `data_dir`, stored datasets) are never kept: their files could change under the same key.

Damage is a miss, never a traceback and never trusted: each row carries a digest of itself and each clip
reference the digest of its compressed audio; a row that is not the JSON shape the store writes, or whose
digest does not match (an edited row, still valid JSON), is synthesized again with one warning per run, and
so is audio whose bytes do not match or that a row does not keep (a study's episodes): its episode once for
all its clips, and the audio made again is written back. The store is capped (`AUDIOEVAL_EPISODE_STORE_GB`, default
DEFAULT_CAP_GB; 0 turns it off): past the cap, the episodes used longest ago are evicted with the audio no
other episode refers to.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import sqlite3
import struct
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from audioeval.audio.wav import samples_of
from audioeval.data.builders import EpisodeBuilder
from audioeval.resources import resource_root
from audioeval.run.cache import open_shared
from audioeval.types import AudioClip, Request

if TYPE_CHECKING:
    from audioeval.run.prepared import PreparedTask

log = logging.getLogger("audioeval")

DEFAULT_CAP_GB = 10.0
CAP_VARIABLE = "AUDIOEVAL_EPISODE_STORE_GB"
CLOSE_WAIT_S = 30.0  # how long `close` waits for calls in progress on other threads
CLIP_MARK = "__clip__"
NO_AUDIO = "-"  # a clip reference's blob digest when the row keeps no audio for it
_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_LIBRARIES = ("numpy", "scipy", "espeakng-loader")
_SCHEMA = """
DROP TABLE IF EXISTS episodes;
CREATE TABLE IF NOT EXISTS episode_rows (
    config TEXT NOT NULL,
    episode INTEGER NOT NULL,
    body TEXT NOT NULL,
    digest TEXT NOT NULL,
    used REAL NOT NULL,
    PRIMARY KEY (config, episode)
);
CREATE TABLE IF NOT EXISTS clip_refs (
    sha256 TEXT NOT NULL,
    config TEXT NOT NULL,
    episode INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS clip_refs_sha ON clip_refs (sha256);
CREATE INDEX IF NOT EXISTS clip_refs_episode ON clip_refs (config, episode);
CREATE TABLE IF NOT EXISTS clips (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    data BLOB NOT NULL
)
"""


# ---- the clip codec ----------------------------------------------------------------------------------------
# A blob holds a clip's PCM16 samples as first differences (wrapping), low bytes and high bytes apart, each
# plane packed by what it holds (`_pack`): audio that changes slowly leaves small differences whose high bytes
# are nearly constant, while the low bytes of noise-like audio do not compress at all and deflating them only
# costs time. Blobs of earlier versions (one zlib stream of both planes, level 1) still decode.
_PLANES = b"\x02"  # first byte of a blob of separately packed planes (a zlib stream starts with 0x78)
_RAW, _DEFLATE = 0, 1
_RAW_BITS = 7.5  # order-0 entropy (bits per byte) from which a plane is kept as it is: deflate saves < 3%
_RLE_BITS = 4.5  # from which runs and Huffman codes alone (Z_RLE) compress as well as full deflate, faster


def encode_clip(pcm: np.ndarray) -> bytes:
    """PCM16 samples -> first differences (wrapping), low then high bytes, each plane packed. Lossless."""
    pcm = np.asarray(pcm, dtype="<i2")
    delta = np.empty_like(pcm)
    delta[:1] = pcm[:1]
    np.subtract(pcm[1:], pcm[:-1], out=delta[1:])
    parts = [_PLANES]
    for plane in np.ascontiguousarray(delta.view(np.uint8).reshape(-1, 2).T):
        method, data = _pack(plane)
        parts += [struct.pack("<BI", method, len(data)), data]
    return b"".join(parts)


def _pack(plane: np.ndarray) -> tuple[int, bytes]:
    counts = np.bincount(plane[::4], minlength=256)  # every 4th byte tells the entropy well enough
    p = counts[counts > 0] / max(1, int(counts.sum()))
    bits = float(-(p * np.log2(p)).sum())
    if bits >= _RAW_BITS:
        return _RAW, plane.tobytes()
    strategy = zlib.Z_RLE if bits >= _RLE_BITS else zlib.Z_DEFAULT_STRATEGY
    packer = zlib.compressobj(1, zlib.DEFLATED, 15, 8, strategy)
    return _DEFLATE, packer.compress(plane.tobytes()) + packer.flush()


def decode_clip(data: bytes, frames: int) -> np.ndarray:
    delta = np.empty(2 * frames, dtype=np.uint8)
    if data[:1] == _PLANES:
        at = 1
        for start in (0, 1):
            if at + 5 > len(data):
                raise ValueError("the blob ends inside a plane header")
            method, size = struct.unpack_from("<BI", data, at)
            packed = data[at + 5 : at + 5 + size]
            at += 5 + size
            if len(packed) != size or method not in (_RAW, _DEFLATE):
                raise ValueError("a plane is cut short or packed in an unknown way")
            plane = np.frombuffer(zlib.decompress(packed) if method == _DEFLATE else packed, dtype=np.uint8)
            if plane.size != frames:
                raise ValueError(f"{plane.size} samples where {frames} were stored")
            delta[start::2] = plane
        if at != len(data):
            raise ValueError("bytes after the second plane")
    else:  # an earlier version's blob: one zlib stream of both planes
        planes = np.frombuffer(zlib.decompress(data), dtype=np.uint8)
        if planes.size != 2 * frames:
            raise ValueError(f"{planes.size // 2} samples where {frames} were stored")
        delta[0::2], delta[1::2] = planes[:frames], planes[frames:]
    return np.cumsum(delta.view("<i2"), dtype=np.int16)


_INDICES_PER_QUERY = 500  # an `IN (...)` list well under SQLite's bound on a statement's variables


def _rows_among(db: sqlite3.Connection, columns: str, config: str, indices: list[int]) -> list[Any]:
    """`columns` of the configuration's episode rows whose index is among `indices`, a few hundred per query."""
    rows: list[Any] = []
    for start in range(0, len(indices), _INDICES_PER_QUERY):
        chunk = indices[start : start + _INDICES_PER_QUERY]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT {columns} FROM episode_rows WHERE config = ? AND episode IN ({marks})"
        rows += db.execute(query, [config, *chunk]).fetchall()
    return rows


def blob_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


class StoredClip(AudioClip):
    """A clip read back from the store: identity, rate and length at once, its PCM16 samples on first use
    (`load`), the float samples and the WAV bytes made from those (no float round trip)."""

    def __init__(self, sha256: str, sampling_rate: int, frames: int, load: Callable[[], np.ndarray]) -> None:
        self.sampling_rate = int(sampling_rate)
        self._frames = int(frames)
        self._load = load
        self._lock = threading.Lock()
        self.__dict__["sha256"] = sha256

    @property
    def pcm(self) -> np.ndarray:
        pcm = self.__dict__.get("_pcm")
        if pcm is None:
            with self._lock:
                pcm = self.__dict__.get("_pcm")
                if pcm is None:
                    pcm = self.__dict__["_pcm"] = self._load()
        return pcm

    @property
    def samples(self) -> np.ndarray:
        samples = self.__dict__.get("_samples")
        if samples is None:
            samples = self.__dict__["_samples"] = samples_of(self.pcm)
        return samples

    @samples.setter
    def samples(self, value: np.ndarray) -> None:
        self.__dict__["_samples"] = value

    @property
    def loaded(self) -> bool:
        return "_pcm" in self.__dict__

    @property
    def frames(self) -> int:
        return self._frames

    @property
    def pcm16(self) -> np.ndarray:
        return self.pcm  # what the WAV bytes are made of: no float round trip

    def known_pcm16(self) -> np.ndarray:  # pickled (to another process) as the plain clip it stands for
        return self.pcm


def audio_unread(request: Request) -> bool:
    """Whether a request carries stored clips whose samples have not been read yet."""
    return any(isinstance(c, StoredClip) and not c.loaded for c in request.clips)


def read_audio(request: Request) -> None:
    for clip in request.clips:
        if isinstance(clip, StoredClip):
            clip.pcm  # noqa: B018 - read and kept by the clip


# ---- episodes as rows --------------------------------------------------------------------------------------
@dataclass
class EncodedEpisode:
    """An episode as the store keeps it: the JSON body (clips as references) and each new clip's audio."""

    body: str
    clips: list[tuple[str, int, int, str]]  # (sha256, sampling rate, frames, blob digest) in reference order
    blobs: dict[str, bytes]  # sha256 -> compressed audio


def clips_in_order(episode: Any) -> list[AudioClip]:
    """The episode's distinct clip objects in the order they are first met (the order of its references)."""
    clips: dict[int, AudioClip] = {}

    def walk(value: Any) -> None:
        if isinstance(value, AudioClip):
            clips.setdefault(id(value), value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(episode)
    return list(clips.values())


def encode_episode(episode: dict[str, Any], audio: bool = True) -> EncodedEpisode | None:
    """None when the episode does not come back from JSON exactly as it is (a tuple, a numpy number, a key
    named like the clip marker): such an episode is synthesized every time. Without `audio` the clips are
    kept as their identity and length only (episodes a reference model studies by their labels and clip
    identities): reading their samples synthesizes the episode again."""
    clips: list[AudioClip] = []
    seen: dict[int, int] = {}

    def strip(value: Any) -> Any:
        if isinstance(value, AudioClip):
            if id(value) not in seen:
                seen[id(value)] = len(clips)
                clips.append(value)
            return {CLIP_MARK: seen[id(value)]}
        if isinstance(value, dict):
            if CLIP_MARK in value:
                raise TypeError("clip marker in the data")
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    try:
        structure = strip(episode)
        body = json.dumps(structure, sort_keys=True, ensure_ascii=False)
        if json.loads(body) != structure:
            return None
    except (TypeError, ValueError):
        return None
    blobs: dict[str, bytes] = {}
    described = []
    for clip in clips:
        if not audio:
            described.append((clip.sha256, clip.sampling_rate, clip.frames, NO_AUDIO))
            continue
        data = blobs.get(clip.sha256)
        if data is None:
            data = blobs[clip.sha256] = encode_clip(clip.pcm16)
        described.append((clip.sha256, clip.sampling_rate, clip.frames, blob_digest(data)))
    return EncodedEpisode(body, described, blobs)


def row_text(encoded: EncodedEpisode) -> str:
    return json.dumps({"episode": json.loads(encoded.body), "clips": encoded.clips}, sort_keys=True)


def row_digest(config: str, index: int, text: str) -> str:
    return hashlib.sha256(f"{config}\0{index}\0{text}".encode()).hexdigest()


def _check_row(text: str, index: int) -> tuple[dict[str, Any], list[tuple[str, int, int, str]]] | None:
    """The episode structure and its clip list, or None when the row is not the shape the store writes."""
    try:
        row = json.loads(text)
    except ValueError:
        return None
    if not isinstance(row, dict) or set(row) != {"episode", "clips"}:
        return None
    episode, clips = row["episode"], row["clips"]
    if not isinstance(episode, dict) or episode.get("index") != index or not isinstance(clips, list):
        return None
    checked = []
    for c in clips:
        if not (isinstance(c, list) and len(c) == 4 and isinstance(c[0], str) and isinstance(c[3], str)):
            return None
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in c[1:3]):
            return None
        checked.append((c[0], c[1], c[2], c[3]))
    return episode, checked


# ---- keys --------------------------------------------------------------------------------------------------
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


def reads_local_files(task: PreparedTask) -> bool:
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


@cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def episode_key(task: PreparedTask, seed: int | None = None) -> str | None:
    """What the task's episodes are a function of (`seed` replaces the builder's); None when they must not be
    kept. Templates, shots and generation settings are not in it: they are applied to the episode later."""
    if reads_local_files(task):
        return None
    config = task.config
    kwargs = dict(config.builder_kwargs)
    if seed is not None:
        kwargs["seed"] = seed
    augment = task.augment.record() if task.augment is not None else None  # levels and target too
    builder_file = inspect.getfile(type(task.builder))
    identity = [
        config.builder,
        _file_digest(builder_file),
        config.builder_config,
        kwargs,
        augment,
        code_digest(),
    ]
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def store_cap_bytes() -> int:
    """The store's size cap from AUDIOEVAL_EPISODE_STORE_GB (default DEFAULT_CAP_GB); 0 turns the store off."""
    raw = os.environ.get(CAP_VARIABLE, "").strip()
    try:
        gb = float(raw) if raw else DEFAULT_CAP_GB
    except ValueError:
        log.warning("%s=%r is not a number of gigabytes: using %g", CAP_VARIABLE, raw, DEFAULT_CAP_GB)
        gb = DEFAULT_CAP_GB
    return max(0, int(gb * 1e9))


# ---- the store ---------------------------------------------------------------------------------------------
class EpisodeStore:
    """SQLite next to the response cache, shared by processes. A store that cannot be opened, read or written
    is dropped with one warning: the run then synthesizes every episode, as it would without it. Usable from
    any thread (one connection per thread). Once closed it reads and writes nothing (a clip read lazily after
    that is missing: synthesized again where its episode can be, else StoredAudioMissing); `close` waits for
    the calls in progress on other threads, since closing an SQLite connection while another thread runs a
    statement on it can crash the process."""

    def __init__(self, path: Path, cap_bytes: int | None = None, quiet: bool = False) -> None:
        self.path = Path(path)
        self.quiet = quiet  # warns of nothing: a look before the run, whose own store says what it finds
        self.cap_bytes = store_cap_bytes() if cap_bytes is None else cap_bytes
        self.usable = True
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        # sha256 -> samples decoded, while a clip holds them: a clip that recurs across episodes (a Morse
        # bank's letters, a corpus clip) is decoded once, not once per episode
        self._decoded: weakref.WeakValueDictionary[str, np.ndarray] = weakref.WeakValueDictionary()
        self._size: int | None = None
        self._opened = False
        self._closed = False
        self._calls = 0  # calls in progress (on any thread): under `_quiet`
        self._quiet = threading.Condition()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db()
        except (sqlite3.Error, OSError) as err:
            self._give_up(err)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            if not self._opened:
                open_shared(self.path, _SCHEMA).close()  # created, in WAL, writable: once per store
                self._opened = True
            db = self._local.db = self._connect()
            with self._lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _open(self) -> Iterator[sqlite3.Connection | None]:
        """This thread's connection for one call, counted as in progress; None once the store is closed (or
        when no connection can be made: the store is then given up)."""
        with self._quiet:
            if self._closed:
                counted = False
            else:
                counted = True
                self._calls += 1
        try:
            db = None
            if counted:
                try:
                    db = self._db()
                except sqlite3.Error as err:
                    self._give_up(err)
            yield db
        finally:
            if counted:
                with self._quiet:
                    self._calls -= 1
                    self._quiet.notify_all()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _abandon(self, db: sqlite3.Connection, err: sqlite3.Error) -> None:
        """A write that failed: its transaction rolled back (if it is still open), the store given up."""
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        self._give_up(err)

    def _give_up(self, err: Exception) -> None:
        if self.usable and not self.quiet:
            log.warning("the episode store %s is unusable (%s): episodes are synthesized.", self.path, err)
        self.usable = False

    def warn_once(self, what: str, message: str) -> None:
        with self._lock:
            if what in self._warned or self.quiet:
                return
            self._warned.add(what)
        log.warning(message)

    # ------------------------------------------------------------------------------------------------------
    def get_many(
        self, config: str, indices: list[int], remake: Callable[[int], dict[str, Any]] | None = None
    ) -> dict[int, dict[str, Any]]:
        """The stored episodes among `indices` (clips as StoredClips); damaged rows are left out (a miss).
        `remake(index)` synthesizes an episode again, for audio found damaged when it is read."""
        if not self.usable or not indices:
            return {}
        with self._open() as db:
            if db is None:
                return {}
            try:
                found = {}
                for index, text, digest in _rows_among(db, "episode, body, digest", config, indices):
                    episode = self._episode(config, index, text, digest, remake)
                    if episode is not None:
                        found[int(index)] = episode
                self._touch(db, config, list(found))
                return found
            except sqlite3.Error as err:
                self._give_up(err)
                return {}

    def stored_indices(self, config: str, indices: list[int]) -> set[int]:
        """Which of `indices` have a row in the store (checked when they are read, not here)."""
        if not self.usable or not indices:
            return set()
        with self._open() as db:
            if db is None:
                return set()
            try:
                return {int(row[0]) for row in _rows_among(db, "episode", config, indices)}
            except sqlite3.Error as err:
                self._give_up(err)
                return set()

    def _episode(
        self, config: str, index: Any, text: Any, digest: Any, remake: Callable[[int], dict[str, Any]] | None
    ) -> dict[str, Any] | None:
        checked = None
        if isinstance(index, int) and isinstance(text, str) and isinstance(digest, str):
            if row_digest(config, index, text) == digest:
                checked = _check_row(text, index)
        if checked is None:
            self.warn_once(
                "row",
                f"the episode store {self.path} holds a damaged or edited episode row (episode {index}): such "
                "episodes are synthesized again and stored anew.",
            )
            return None
        structure, clips = checked
        again = _MadeAgain(self, config, index, [c[0] for c in clips], remake) if remake is not None else None
        made = [
            StoredClip(sha, rate, frames, self._loader(sha, frames, blob, (index, i), again))
            for i, (sha, rate, frames, blob) in enumerate(clips)
        ]

        def restore(value: Any) -> Any:
            if isinstance(value, dict):
                if CLIP_MARK in value:
                    return made[value[CLIP_MARK]]
                return {k: restore(v) for k, v in value.items()}
            if isinstance(value, list):
                return [restore(v) for v in value]
            return value

        try:
            return restore(structure)
        except (IndexError, TypeError):
            return None

    def _loader(
        self,
        sha: str,
        frames: int,
        blob: str,
        where: tuple[int, int],
        again: _MadeAgain | None,
    ) -> Callable[[], np.ndarray]:
        def load() -> np.ndarray:
            with self._lock:
                decoded = self._decoded.get(sha)
            if decoded is not None and len(decoded) == frames:
                return decoded
            try:
                decoded = self.read_clip(sha, frames, blob)
            except StoredAudioMissing as err:
                if again is None:
                    raise
                if blob != NO_AUDIO:
                    self.warn_once(
                        "audio",
                        f"the episode store {self.path}: a clip of episode {where[0]} could not be read back "
                        f"({err}); such episodes are synthesized again.",
                    )
            else:
                decoded.flags.writeable = False  # shared by the clips of that content
                with self._lock:
                    self._decoded[sha] = decoded
                return decoded
            return again.pcm16(where[1])

        return load

    def read_clip(self, sha: str, frames: int, blob: str) -> np.ndarray:
        """The PCM16 samples of a stored clip; raises StoredAudioMissing when they are gone or damaged."""
        with self._open() as db:
            if db is None:
                raise StoredAudioMissing("the episode store was closed before the clip was read")
            try:
                row = db.execute("SELECT data FROM clips WHERE sha256 = ?", (sha,)).fetchone()
            except sqlite3.Error as err:
                raise StoredAudioMissing(f"the episode store could not be read ({err})") from err
        if blob == NO_AUDIO:
            raise StoredAudioMissing("its audio was not kept")
        if row is None or not isinstance(row[0], bytes) or blob_digest(row[0]) != blob:
            raise StoredAudioMissing("its audio is missing or does not match its digest")
        try:
            return decode_clip(row[0], frames)
        except (zlib.error, ValueError) as err:
            raise StoredAudioMissing(f"its audio does not decode ({err})") from err

    def _touch(self, db: sqlite3.Connection, config: str, indices: list[int]) -> None:
        """Mark episodes as used (eviction drops the least recently used first); at most once an hour each."""
        if not indices:
            return
        now = time.time()
        marks = ",".join("?" * len(indices))
        db.execute(
            f"UPDATE episode_rows SET used = ? WHERE config = ? AND used < ? AND episode IN ({marks})",
            [now, config, now - 3600, *indices],
        )

    # ------------------------------------------------------------------------------------------------------
    def put_many(self, config: str, episodes: dict[int, EncodedEpisode]) -> None:
        if not self.usable or not episodes or self.cap_bytes <= 0:
            return
        with self._open() as db:
            if db is not None:
                self._put_many(db, config, episodes)

    def _put_many(self, db: sqlite3.Connection, config: str, episodes: dict[int, EncodedEpisode]) -> None:
        now = time.time()
        try:
            db.execute("BEGIN IMMEDIATE")
            added = 0
            for index, encoded in sorted(episodes.items()):
                encoded, audio_added = self._put_audio(db, encoded)
                added += audio_added
                text = row_text(encoded)
                db.execute("DELETE FROM clip_refs WHERE config = ? AND episode = ?", (config, index))
                db.executemany(
                    "INSERT INTO clip_refs VALUES (?, ?, ?)",
                    [(c[0], config, index) for c in set(encoded.clips)],
                )
                db.execute(
                    "INSERT OR REPLACE INTO episode_rows VALUES (?, ?, ?, ?, ?)",
                    (config, index, text, row_digest(config, index, text), now),
                )
                added += len(text)
            db.execute("COMMIT")
        except sqlite3.Error as err:
            self._abandon(db, err)
            return
        self._size = (self._size if self._size is not None else self._size_of(db)) + added
        if self._size > self.cap_bytes:
            self._evict(db)

    def _put_audio(self, db: sqlite3.Connection, encoded: EncodedEpisode) -> tuple[EncodedEpisode, int]:
        """Insert the episode's audio (in the open transaction) and say how many bytes that added. A clip whose
        audio is stored already in other bytes (an earlier version's encoding) keeps them, and the episode's
        reference names them, unless they no longer decode to that clip: then this encoding replaces them."""
        added = 0
        kept: dict[str, str] = {}  # sha256 -> digest of the stored bytes the reference must name
        frames = {c[0]: (c[1], c[2], c[3]) for c in encoded.clips}
        for sha, data in encoded.blobs.items():
            if db.execute("INSERT OR IGNORE INTO clips VALUES (?, ?, ?)", (sha, len(data), data)).rowcount:
                added += len(data)
                continue
            rate, count, digest = frames[sha]
            row = db.execute("SELECT data FROM clips WHERE sha256 = ?", (sha,)).fetchone()
            stored = row[0] if row is not None and isinstance(row[0], bytes) else b""
            if blob_digest(stored) == digest:
                continue
            if _holds(stored, sha, rate, count):
                kept[sha] = blob_digest(stored)
            else:
                db.execute("UPDATE clips SET size = ?, data = ? WHERE sha256 = ?", (len(data), data, sha))
                added += len(data) - len(stored)
        if not kept:
            return encoded, added
        clips = [(sha, rate, count, kept.get(sha, blob)) for sha, rate, count, blob in encoded.clips]
        return EncodedEpisode(encoded.body, clips, encoded.blobs), added

    def size(self) -> int:
        """Bytes of audio and episode rows stored (0 once closed)."""
        with self._open() as db:
            return 0 if db is None else self._size_of(db)

    @staticmethod
    def _size_of(db: sqlite3.Connection) -> int:
        clips = db.execute("SELECT COALESCE(SUM(size), 0) FROM clips").fetchone()[0]
        rows = db.execute("SELECT COALESCE(SUM(LENGTH(body)), 0) FROM episode_rows").fetchone()[0]
        return int(clips) + int(rows)

    def evict(self) -> None:
        """Drop the least recently used episodes, then the audio nothing refers to, until under 90% of the cap."""
        with self._open() as db:
            if db is not None:
                self._evict(db)

    def _evict(self, db: sqlite3.Connection) -> None:
        try:
            while True:
                size = self._size_of(db)
                self._size = size
                if size <= 0.9 * self.cap_bytes:
                    return
                total = db.execute("SELECT COUNT(*) FROM episode_rows").fetchone()[0]
                if not total:
                    return
                db.execute("BEGIN IMMEDIATE")
                oldest = db.execute(
                    "SELECT config, episode FROM episode_rows ORDER BY used LIMIT ?", (max(1, total // 10),)
                ).fetchall()
                db.executemany("DELETE FROM episode_rows WHERE config = ? AND episode = ?", oldest)
                db.executemany("DELETE FROM clip_refs WHERE config = ? AND episode = ?", oldest)
                db.execute("DELETE FROM clips WHERE sha256 NOT IN (SELECT sha256 FROM clip_refs)")
                db.execute("COMMIT")
        except sqlite3.Error as err:
            self._abandon(db, err)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Refuse new calls, wait for those in progress, close every thread's connection. Calls still running
        after `wait_s` keep the connections open (left to the process's exit) rather than crash under them."""
        with self._quiet:
            self._closed = True
            if not self._quiet.wait_for(lambda: self._calls == 0, timeout=wait_s):
                log.warning(
                    "the episode store %s: a call still in progress after %g s; its connections are left open",
                    self.path,
                    wait_s,
                )
                return
        with self._lock:
            connections, self._connections = self._connections, []
        for db in connections:
            try:
                db.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()


class _MadeAgain:
    """A stored episode some of whose audio could not be read back (damaged, evicted, or never kept): synthesized
    again once for all its clips, on the first clip that needs it, and its audio written back to the store, so
    the next run reads it."""

    def __init__(
        self,
        store: EpisodeStore,
        config: str,
        index: int,
        shas: list[str],
        remake: Callable[[int], dict[str, Any]],
    ) -> None:
        self.store, self.config, self.index, self.shas, self.remake = store, config, index, shas, remake
        self._pcm: dict[int, np.ndarray] | None = None  # clip position -> PCM16, until that clip takes it
        self._lock = threading.Lock()

    def pcm16(self, position: int) -> np.ndarray:
        with self._lock:
            if self._pcm is None:
                self._pcm = self._make()
            pcm = self._pcm.pop(position, None)
        if pcm is None:
            raise StoredAudioMissing(f"episode {self.index} synthesized again differs from the stored one")
        return pcm

    def _make(self) -> dict[int, np.ndarray]:
        episode = self.remake(self.index)
        clips = clips_in_order(episode)
        same = [clip.sha256 for clip in clips] == self.shas
        if same:
            encoded = encode_episode(episode)
            if encoded is not None:
                self.store.put_many(self.config, {self.index: encoded})
        return {
            i: clip.pcm16
            for i, clip in enumerate(clips)
            if i < len(self.shas) and clip.sha256 == self.shas[i]
        }


def _holds(data: bytes, sha: str, sampling_rate: int, frames: int) -> bool:
    """Whether stored audio bytes decode to the clip of this identity."""
    try:
        pcm = decode_clip(data, frames)
    except (zlib.error, ValueError):
        return False
    return AudioClip.from_pcm16(pcm, sampling_rate).sha256 == sha


class StoredAudioMissing(Exception):
    """A stored clip's audio could not be read back as stored (the caller synthesizes the episode again)."""
