"""Clips as a processor wants them: float32 at its sampling rate, cut to the longest duration it accepts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from audioeval.audio.dsp import resample
from audioeval.types import AudioClip

log = logging.getLogger("audioeval")


@dataclass
class ClipBatch:
    arrays: list[np.ndarray] = field(default_factory=list)
    truncated: list[dict[str, Any]] = field(default_factory=list)  # goes to Response.info["truncated_audio"]


@dataclass
class AudioPreparer:
    """Resamples and truncates; warns for the first few truncations, then only records them."""

    sampling_rate: int
    max_seconds: float | None
    source: str
    warn_limit: int = 5
    _warned: int = 0

    def prepare(self, clips: list[AudioClip]) -> ClipBatch:
        batch = ClipBatch()
        for index, clip in enumerate(clips):
            x = resample(clip.samples, clip.sampling_rate, self.sampling_rate)
            if self.max_seconds is not None:
                limit = int(round(self.max_seconds * self.sampling_rate))
                if len(x) > limit:
                    batch.truncated.append(
                        {
                            "clip": index,
                            "seconds": round(clip.seconds, 3),
                            "kept_seconds": round(self.max_seconds, 3),
                        }
                    )
                    self._warn(clip.seconds)
                    x = x[:limit]
            batch.arrays.append(x)
        return batch

    def _warn(self, seconds: float) -> None:
        self._warned += 1
        if self._warned <= self.warn_limit:
            log.warning(
                "%s accepts at most %.1f s of audio per clip; a %.1f s clip was cut to that length "
                "(recorded in the sample's response_info.truncated_audio).",
                self.source,
                self.max_seconds,
                seconds,
            )
        if self._warned == self.warn_limit:
            log.warning("further truncations are recorded in the samples without a warning.")
