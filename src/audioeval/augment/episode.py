"""Applying a condition to an episode: the target clips are replaced by their degraded versions, everything
else (labels, metadata, roles, extra fields) is left as it is. The result is an ordinary episode, so what is
rendered, hashed, cached, logged and exported is the degraded audio.

The episode gains an `augment` entry: the condition, and per degraded clip the parameters every transform
used (and, for additive noise, the SNR measured on the final 16-bit clip).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from audioeval.audio.wav import PCM16_SCALE
from audioeval.augment.noises import measured_snr_db
from audioeval.augment.plan import AugmentPlan, Condition
from audioeval.augment.seeding import ClipKey
from audioeval.errors import AudioEvalError, DataError, UsageError
from audioeval.types import AudioClip

log = logging.getLogger("audioeval")
SNR_TOLERANCE_DB = 0.5
_warned: set[str] = set()


def episode_source(builder: Any) -> str:
    """Where an episode's clips come from: the builder and its config (not the task: tasks that share
    episodes share their degradations, and `audioeval build` reproduces them)."""
    return f"{builder.name}/{builder.config.name}"


def check_refusals(builder: Any, plan: AugmentPlan, who: str) -> None:
    """A builder may declare that a transform would falsify its labels (or that its clips must stay
    bit-exact); such a combination is refused before anything runs."""
    for step in plan.conditions[0].steps:
        reason = builder.augmentation_refusal(step.transform)
        if reason:
            raise UsageError(f"--augment {step.transform}: {who} refuses it: {reason}")


def _target_clips(episode: dict[str, Any], target: str) -> Iterator[tuple[str, list[dict[str, Any]], int]]:
    """(slot, list holding the clip, index in it) for every clip the target covers."""
    if target in ("demos", "all"):
        context = episode.get("context") or []
        for i in range(len(context)):
            yield f"context/{i}", context, i
        for d, demo in enumerate(episode.get("demos") or []):
            for i in range(len(demo.get("clips") or [])):
                yield f"demos/{d}/{i}", demo["clips"], i
    if target in ("query", "all"):
        clips = episode["query"].get("clips") or []
        for i in range(len(clips)):
            yield f"query/{i}", clips, i


def _copy_structure(episode: dict[str, Any]) -> dict[str, Any]:
    """A copy whose clip lists can be replaced without touching the builder's episode."""
    out = dict(episode)
    out["context"] = list(episode.get("context") or [])
    out["demos"] = [{**d, "clips": list(d.get("clips") or [])} for d in episode.get("demos") or []]
    out["query"] = {**episode["query"], "clips": list(episode["query"].get("clips") or [])}
    return out


def on_grid(samples: np.ndarray) -> np.ndarray:
    """The same numbers as audio.wav.quantize, several times faster for float32 input (the product with
    the scale is exact in float64, so rounding it there rounds exactly what quantize rounds)."""
    grid = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0).astype(np.float64)
    grid *= PCM16_SCALE
    np.rint(grid, out=grid)
    out = grid.astype(np.float32)
    out /= np.float32(PCM16_SCALE)
    return out


def degrade_clip(
    clip: AudioClip, condition: Condition, key: ClipKey
) -> tuple[AudioClip, list[dict[str, Any]]]:
    samples = np.asarray(clip.samples, dtype=np.float32)
    rate = clip.sampling_rate
    facts = []
    for step in condition.steps:  # every step starts and ends on the 16-bit grid, as if it wrote a WAV file
        before = samples
        try:
            samples, step_facts = step.spec.run(samples, rate, step.level, key.rng(step.transform))
        except AudioEvalError:
            raise
        except Exception as err:  # noqa: BLE001 - name the clip and the transform instead of a deep traceback
            raise DataError(
                f"--augment {step.label} failed on {key.source} episode {key.episode} clip {key.slot} "
                f"({len(before)} samples at {rate} Hz): {type(err).__name__}: {err}"
            ) from err
        samples = on_grid(samples)
        entry = {"transform": step.transform, "level": step.level, **step_facts}
        if step.spec.snr:  # against the clip as scaled with the noise, when the mix needed headroom
            entry["measured_snr_db"] = measured_snr_db(before * np.float32(entry["headroom_gain"]), samples)
        facts.append(entry)
    return AudioClip(samples, rate), facts


def _check_snr(condition: Condition, key: ClipKey, facts: list[dict[str, Any]]) -> None:
    for entry in facts:
        measured = entry.get("measured_snr_db")
        if measured is None or abs(measured - entry["level"]) <= SNR_TOLERANCE_DB:
            continue
        tag = f"{condition.name}/{key.source}"
        if tag not in _warned:
            _warned.add(tag)
            log.warning(
                "--augment %s: %s episode %d clip %s came out at %.2f dB SNR, not %s dB (a very quiet clip "
                "meets the 16-bit grid's resolution, or a loud one clips at full scale); further clips of this "
                "source are not reported.",
                condition.name,
                key.source,
                key.episode,
                key.slot,
                measured,
                entry["level"],
            )


def augment_episode(episode: dict[str, Any], condition: Condition, builder: Any) -> dict[str, Any]:
    out = _copy_structure(episode)
    source, seed = episode_source(builder), int(getattr(builder.config, "seed", 0))
    clips_facts: dict[str, Any] = {}
    for slot, holder, i in _target_clips(out, condition.target):
        clip = holder[i]
        key = ClipKey(seed, source, int(episode["index"]), slot, str(clip.get("role")))
        degraded, facts = degrade_clip(clip["audio"], condition, key)
        _check_snr(condition, key, facts)
        holder[i] = {**clip, "audio": degraded}
        clips_facts[slot] = facts
    out["augment"] = {"condition": condition.name, "target": condition.target, "clips": clips_facts}
    return out


def recorded_episode(builder: Any, index: int, record: dict[str, Any] | None) -> dict[str, Any]:
    """Episode `index` as a run evaluated it: clean, or under the condition that results.json records in
    `configs[<task>]["augment"]` (what `audioeval view` replays)."""
    episode = builder.episode(index)
    return episode if not record else augment_episode(episode, Condition.from_record(record), builder)
