"""Where every random draw of an augmentation comes from.

Each (clip, transform) pair gets its own generator, seeded by the run seed, the episodes' source (builder
and builder config), the episode index, the clip's slot and role, and the transform's name. The level is
not part of the seed: a sweep over SNRs adds the same noise waveform, scaled, so the levels differ only in
the level (common random numbers).

audiomentations draws its free parameters (a mask position, a room geometry) and some signals (its
coloured noise) from python's `random` and numpy's global generator. `isolated_global_rng` seeds both from
the clip's own generator for the duration of one transform and puts the caller's states back afterwards,
under a lock, so the output depends on the key alone and nothing outside sees a draw. (pyroomacoustics
keeps a generator of its own; it is seeded the same way when the transform uses it.)
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from audioeval.seeds import stable_seed

_GLOBAL_RNG_LOCK = threading.Lock()


@dataclass(frozen=True)
class ClipKey:
    """Identifies one clip of one episode, independently of the prompt it ends up in."""

    seed: int
    source: str  # "<builder>/<builder config>"
    episode: int
    slot: str  # "query/0", "demos/2/0", "context/5"
    role: str  # the clip's own role field ("query", "demo", "anchor", ...)

    def rng(self, transform: str) -> np.random.Generator:
        return np.random.default_rng(
            stable_seed("augment", self.seed, self.source, self.episode, self.slot, self.role, transform)
        )


@contextmanager
def isolated_global_rng(rng: np.random.Generator, pyroomacoustics: bool = False) -> Iterator[None]:
    """Run a block with python's and numpy's global generators (and pyroomacoustics' when asked) seeded
    from `rng`; the caller's global states are restored on exit."""
    seeds = [int(s) for s in rng.integers(0, 2**32, size=4, dtype=np.uint64)]
    with _GLOBAL_RNG_LOCK:
        py_state, np_state = random.getstate(), np.random.get_state()
        try:
            random.seed(seeds[0])
            np.random.seed(seeds[1])
            if pyroomacoustics:
                import pyroomacoustics as pra

                pra.random.seed(numpy=seeds[2], libroom=seeds[3])
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
