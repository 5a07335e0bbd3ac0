"""`demo-majority`: the most frequent label among the demonstrations shown (a prior-only learner).

Ties are broken by a draw seeded per request. With no demonstrations (k=0) it draws uniformly from the
task's label space, i.e. it is `chance`."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import numpy as np

from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.models.baselines.examples import examples_of
from audioeval.seeds import stable_seed
from audioeval.types import Request, Response


class DemoMajorityModel(Model):
    name = "demo-majority"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    @classmethod
    def check_request(cls, request: Request, source: str) -> None:
        if request.rid.shots == 0 and not request.choices:
            raise ModelError(
                f"{source}: model {cls.name!r} needs demonstrations (k >= 1) or a task label space."
            )
        if request.rid.shots > 0 and not (request.shown is not None and request.shown.demos):
            raise ModelError(f"{source}: model {cls.name!r} needs episodes with demonstrations.")

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": self.name, "seed": self.seed}

    def _pick(self, request: Request, candidates: list[str]) -> str:
        rng = np.random.default_rng(stable_seed(self.seed, request.content_key({"model": self.name})))
        return candidates[int(rng.integers(len(candidates)))]

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            start = time.perf_counter()
            labels = examples_of(request, self.name).labels if request.rid.shots else []
            if labels:
                counts = Counter(labels)
                best = max(counts.values())
                answer = self._pick(request, sorted(label for label, c in counts.items() if c == best))
            else:
                answer = self._pick(request, list(request.choices or ()))
            out.append(Response(text=answer, latency_s=time.perf_counter() - start))
        return out
