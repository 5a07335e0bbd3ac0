"""What `dsp-oracle` may look at: the audio and the labels shown in the prompt, nothing else.

`oracle_view(request)` copies out of `request.info["episode"]` the context clips (the Morse bank), the first
k demonstrations (their clips and labels) and the query's clips, keeping for every clip only its role, the label
the prompt shows next to it and its samples. The episode metadata and the facts generators attach to each
shot (counts, onsets, operands, the anomaly kind...) justify the labels and are dropped here, so no method can
read the answer from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from audioeval.errors import ModelError
from audioeval.types import Request


@dataclass(frozen=True)
class Clip:
    role: str
    label: str | None  # the label printed next to the clip in the prompt (None: not shown)
    samples: np.ndarray  # float64, mono
    sampling_rate: int
    sha256: str  # identity of the audio, for caching analyses across requests


@dataclass(frozen=True)
class Shot:
    clips: tuple[Clip, ...]
    label: str | None  # the demo's answer; None for the query


@dataclass(frozen=True)
class OracleView:
    task: str  # builder config, e.g. "audio_count"
    k: int
    context: tuple[Clip, ...]
    demos: tuple[Shot, ...]
    query: Shot


def _clip(raw: dict) -> Clip:
    audio = raw["audio"]
    label = raw.get("label")
    return Clip(
        role=str(raw.get("role") or ""),
        label=None if label in (None, "") else str(label),
        samples=np.asarray(audio.samples, dtype=np.float64),
        sampling_rate=int(audio.sampling_rate),
        sha256=audio.sha256,
    )


def oracle_view(request: Request, task: str) -> OracleView:
    episode = request.info.get("episode")
    if not episode:
        raise ModelError(
            f"model 'dsp-oracle', task {request.rid.task!r}: the request carries no episode structure "
            "(request.info['episode']); run it through the harness on an AudioICL-Bench task."
        )
    k = int(request.rid.shots)
    demos_raw = (episode.get("demos") or [])[:k]
    if len(demos_raw) < k:
        raise ModelError(
            f"model 'dsp-oracle', task {request.rid.task!r}: k={k} but the episode carries {len(demos_raw)} demos."
        )
    query_clips = tuple(_clip(c) for c in (episode.get("query") or {}).get("clips") or [])
    if not query_clips:
        raise ModelError(f"model 'dsp-oracle', task {request.rid.task!r}: the query has no audio clip.")
    demos = tuple(
        Shot(
            tuple(_clip(c) for c in d.get("clips") or []), None if d.get("label") is None else str(d["label"])
        )
        for d in demos_raw
    )
    context = tuple(_clip(c) for c in episode.get("context") or [])
    return OracleView(task=task, k=k, context=context, demos=demos, query=Shot(query_clips, None))
