"""Rebuilding the audio of a logged sample from the task configuration its run recorded.

results.json keeps, per task, the resolved configuration the run used (builder, builder config and builder
kwargs, seed included) and, for a task run under `--augment`, the condition. Episodes are pure functions of
(config, seed, index), so the builder rebuilds the episode (degraded as the run degraded it) and every clip the sample log names by sha256 is looked up among the episode's clips. A clip whose
sha256 is not there (another audioeval version, a changed builder, a different corpus) is reported as such and
never served: the browser only ever plays audio identical to what the model heard.

A builder given by file path is code outside audioeval, named by results.json: a run folder from someone else
could name any file. The viewer runs such a file only when the user says `--trust_builder_files`; a builder
name must be one of the shipped builders.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.audio.wav import encode_wav
from audioeval.augment.episode import recorded_episode
from audioeval.data.builders import EpisodeBuilder, builder_names, make_builder
from audioeval.data.stored_episodes import open_episodes
from audioeval.errors import AudioEvalError
from audioeval.results.record import TaskRecord
from audioeval.types import AudioClip

log = logging.getLogger("audioeval")

SHA_DIFFERS = "cannot be regenerated (sha256 differs)"
# Builders may share process-wide synthesizer state (eSpeak NG is one C library): one episode at a time.
_BUILD_LOCK = threading.Lock()


@dataclass(frozen=True)
class RebuiltClip:
    clip: AudioClip
    place: str  # "context", "demo 2", "query"
    role: str | None
    label: str | None
    demo: int | None = None  # 1-based demo number, None for context and query clips


@dataclass
class EpisodeClips:
    """The clips of one rebuilt episode in episode order, or why the episode could not be rebuilt."""

    clips: list[RebuiltClip]
    metadata: dict[str, Any] | None
    problem: str | None = None  # set when the episode could not be rebuilt at all

    def find(self, sha256: str) -> RebuiltClip | None:
        return next((c for c in self.clips if c.clip.sha256 == sha256), None)

    def placed(self, k: int) -> dict[str, list[RebuiltClip]]:
        """The clips a prompt with k demos holds (context, the first k demos, the query) by sha256, in episode
        order: the n-th time a sha256 occurs in the prompt is its n-th clip here (identical audio can occur
        in several places, e.g. the same reference sound in every demo)."""
        out: dict[str, list[RebuiltClip]] = {}
        for c in self.clips:
            if c.demo is None or c.demo <= k:
                out.setdefault(c.clip.sha256, []).append(c)
        return out


def _label(value: Any) -> str | None:
    return None if value is None else str(value)


def episode_clips(episode: dict[str, Any]) -> list[RebuiltClip]:
    found: list[RebuiltClip] = []

    def add(clip: Any, place: str, demo: int | None, fallback_label: Any = None) -> None:
        audio = clip.get("audio") if isinstance(clip, dict) else clip
        if not isinstance(audio, AudioClip):
            return
        info = clip if isinstance(clip, dict) else {}
        label = info.get("label") if info.get("label") is not None else fallback_label
        found.append(RebuiltClip(audio, place, _label(info.get("role")), _label(label), demo))

    for clip in episode.get("context") or []:
        add(clip, "context", None)
    for i, demo in enumerate(episode.get("demos") or [], start=1):
        clips = demo.get("clips") or []
        for clip in clips:
            add(clip, f"demo {i}", i, demo.get("label") if len(clips) == 1 else None)
    query = episode.get("query") or {}
    query_clips = query.get("clips") or []
    for clip in query_clips:
        add(clip, "query", None, query.get("label") if len(query_clips) == 1 else None)
    return found


class TaskEpisodes:
    """The episodes of one task of one run, rebuilt on demand (the last few kept)."""

    def __init__(
        self, task: str, recorded: TaskRecord | None, trust_builder_files: bool = False, keep: int = 48
    ) -> None:
        self.task = task
        self.recorded = recorded
        self.trust_builder_files = trust_builder_files
        self._builder: EpisodeBuilder | None = None
        self._problem: str | None = None
        self._episodes: OrderedDict[int, EpisodeClips] = OrderedDict()
        self._keep = keep

    def _get_builder(self) -> EpisodeBuilder | None:
        if self._builder is None and self._problem is None:
            try:
                self._builder = self._make_builder()
            except (AudioEvalError, OSError, ValueError, TypeError, ImportError) as err:
                self._problem = f"cannot be regenerated ({_one_line(err)})"
                log.warning("%s: %s", self.task, self._problem)
        return self._builder

    def _make_builder(self) -> EpisodeBuilder:
        if self.recorded is None:
            raise _Unavailable("the run did not record this task's configuration: it has no results.json")
        config = self.recorded.config
        name = str(config.get("builder") or "")
        if name.endswith(".py"):
            # a builder given by file path: the run records where that file was
            recorded_file = self.recorded.builder_file
            if not recorded_file or not Path(recorded_file).is_file():
                where = recorded_file or "(not recorded by this run)"
                raise _Unavailable(f"builder file {name} is not at {where}")
            if not self.trust_builder_files:
                raise _Unavailable(untrusted_builder_note(str(recorded_file)))
            name = str(recorded_file)
        elif name not in builder_names():
            raise _Unavailable(
                f"builder {name!r} is not one of audioeval's builders ({', '.join(builder_names())})"
            )
        builder = make_builder(
            name,
            config.get("builder_config"),
            dict(config.get("builder_kwargs") or {}),
            source=f"task {self.task} as recorded in results.json",
        )
        stored = (config.get("parameters") or {}).get("dataset")
        if not stored:
            return builder
        # the run read stored episodes: show those (a changed folder shows up as a sha256 mismatch per clip)
        return open_episodes(
            builder, str(stored), Path(name).stem, str(config.get("split") or "test"), builder_names()
        )

    def episode(self, index: int) -> EpisodeClips:
        with _BUILD_LOCK:
            cached = self._episodes.get(index)
            if cached is not None:
                self._episodes.move_to_end(index)
                return cached
            builder = self._get_builder()
            if builder is None:
                return EpisodeClips([], None, self._problem)
            try:
                augment = self.recorded.augment if self.recorded else None
                episode = recorded_episode(builder, index, augment)
                rebuilt = EpisodeClips(episode_clips(episode), episode.get("metadata"))
            except Exception as err:  # noqa: BLE001 - any builder failure is shown on the sample, not raised
                rebuilt = EpisodeClips([], None, f"cannot be regenerated ({_one_line(err)})")
            self._episodes[index] = rebuilt
            while len(self._episodes) > self._keep:
                self._episodes.popitem(last=False)
            return rebuilt


def untrusted_builder_note(path: str) -> str:
    return (
        f"not rebuilt: its builder is the file {path}, code outside audioeval; "
        "the viewer runs it only with --trust_builder_files"
    )


def builder_files(configs: dict[str, TaskRecord]) -> dict[str, str]:
    """task -> the builder file its run recorded, for the tasks whose builder is code outside audioeval."""
    out: dict[str, str] = {}
    for task, block in configs.items():
        if str(block.config.get("builder") or "").endswith(".py"):
            out[task] = block.builder_file or str(block.config["builder"])
    return out


class RunAudio:
    """Every task's episodes of one run."""

    def __init__(self, configs: dict[str, TaskRecord], trust_builder_files: bool = False) -> None:
        self._configs = configs
        self._trust = trust_builder_files
        self._tasks: dict[str, TaskEpisodes] = {}
        self._lock = threading.Lock()

    def task(self, name: str) -> TaskEpisodes:
        with self._lock:
            if name not in self._tasks:
                self._tasks[name] = TaskEpisodes(name, self._configs.get(name), self._trust)
            return self._tasks[name]

    def episode(self, task: str, index: int) -> EpisodeClips:
        return self.task(task).episode(index)

    def wav(self, task: str, index: int, sha256: str) -> bytes | None:
        """The clip as WAV bytes when the rebuilt episode holds a clip with exactly this sha256."""
        rebuilt = self.episode(task, index).find(sha256)
        if rebuilt is None:
            return None
        return encode_wav(rebuilt.clip.samples, rebuilt.clip.sampling_rate)


class _Unavailable(AudioEvalError):
    pass


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= 300 else text[:299] + "…"
