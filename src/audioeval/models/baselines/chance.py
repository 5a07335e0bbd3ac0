"""`chance`: a uniform draw from the label space the task declares, seeded per request.

The draw depends only on the request's content and the seed, so it is the same for any batch size, process
count or rerun. It lets the whole loop run with no model download."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.seeds import stable_seed
from audioeval.types import Request, Response


class ChanceModel(Model):
    name = "chance"
    needs_choices = True

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": self.name, "seed": self.seed}

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            start = time.perf_counter()
            if not request.choices:
                raise ModelError(
                    f"model 'chance' needs a label space, but task {request.rid.task!r} declares none "
                    "(add `label_space:` to its YAML)."
                )
            key = request.content_key(self.identity)
            rng = np.random.default_rng(stable_seed(self.seed, key))
            choice = request.choices[int(rng.integers(len(request.choices)))]
            out.append(Response(text=choice, latency_s=time.perf_counter() - start))
        return out
