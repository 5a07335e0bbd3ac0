"""What every AudioICL-Bench generator shares: the settings it reads, seeded generators and clip dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audioeval.benchmarks.audioicl_bench.configs import CONFIGS
from audioeval.benchmarks.audioicl_bench.sounds.morse import MorseStyle
from audioeval.benchmarks.audioicl_bench.sources import Digits, Distractors, Machines, OneShots
from audioeval.types import AudioClip, UnrenderedClip

TASK_IDS = {name: spec.task_id for name, spec in CONFIGS.items()}  # seeds every episode (configs.py)
QUERY_SLOT = 0


@dataclass(frozen=True)
class Settings:
    task: str
    seed: int
    max_shots: int
    sampling_rate: int
    oneshots: OneShots = field(default_factory=OneShots)
    digits: Digits = field(default_factory=Digits)
    distractors: Distractors = field(default_factory=Distractors)
    machines: Machines = field(default_factory=Machines)
    distractor_snr_db: tuple[float, float] = (10.0, 15.0)
    anomaly_strength_db: float = -15.0
    anomaly_seconds: float = 10.0
    morse: MorseStyle = field(default_factory=MorseStyle)
    words: tuple[str, ...] = ()
    # remove the shortcuts a signal-blind model can exploit (clip identity, elimination); see docs/audioicl_bench.md
    shortcut_free: bool = False


def episode_rng(settings: Settings, index: int) -> np.random.Generator:
    """Episode-level draws (the rule, the sounds, the label order)."""
    return np.random.default_rng([settings.seed, TASK_IDS[settings.task], index])


def slot_rng(settings: Settings, index: int, slot: int) -> np.random.Generator:
    """Draws for one clip slot: 0 is the query, 1..max_shots the demos. Independent of max_shots, so an
    episode's query and first demos are the same whatever max_shots is."""
    return np.random.default_rng([settings.seed, TASK_IDS[settings.task], index, slot + 1])


def clip(role: str, label: str | None, samples: np.ndarray, sampling_rate: int) -> dict[str, Any]:
    return {"role": role, "label": label, "audio": AudioClip.from_array(samples, sampling_rate)}


def outline_clip(
    settings: Settings, index: int, slot: int, role: str, label: str | None, position: int = 0
) -> dict[str, Any]:
    """A clip of an episode outline: `clip` without the samples. Its identity names the clip's place (episode,
    slot, position in the slot), which stands for its bytes in the generators that outline: there every clip
    is drawn from its own slot's generator, so no two clips of an episode are byte-identical."""
    identity = f"outline:{settings.task}:{settings.seed}:{index}:{slot}:{position}"
    return {"role": role, "label": label, "audio": UnrenderedClip(identity, settings.sampling_rate)}


def episode(
    settings: Settings,
    index: int,
    demos: list[dict[str, Any]],
    query: dict[str, Any],
    metadata: dict[str, Any],
    context: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "id": f"{settings.task}-{index:05d}",
        "index": int(index),
        "context": context or [],
        "demos": demos,
        "query": query,
        "metadata": {
            "task": settings.task,
            "seed": settings.seed,
            "index": int(index),
            **({"shortcut_free": True} if settings.shortcut_free else {}),
            **metadata,
        },
    }
