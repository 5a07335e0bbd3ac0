"""`--asr pocketsphinx`: the offline PocketSphinx recogniser (models/pocketsphinx_asr.py) in worker
processes. Its decoder holds the GIL for the whole utterance (measured: a thread decoding for 4 s lets the
event loop run 17 times), so run in a thread it would stall generation; in a process it overlaps it.

A smoke-test ASR, not a scoring one: it recognises 16 of 60 real FSDD digit recordings. Results name the ASR.
Each utterance starts from the decoder's initial state, so a transcript depends only on its clip, whatever
the number of workers or processes.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from audioeval.config.fields import Arg
from audioeval.models.base import Model
from audioeval.models.pocketsphinx_asr import (
    AcousticModel,
    Dictionary,
    LanguageModel,
    PocketSphinxModel,
    model_paths,
    paths_identity,
)
from audioeval.types import AudioClip, Request, Response

_decoder: PocketSphinxModel | None = None  # in each worker process


def _start(paths: dict[str, str]) -> None:
    global _decoder
    _decoder = PocketSphinxModel(hmm=paths["hmm"], lm=paths["lm"], dictionary=paths["dict"])


def _transcribe(samples: np.ndarray, sampling_rate: int) -> str:
    assert _decoder is not None  # set by _start
    return _decoder.transcribe(AudioClip(samples, sampling_rate))


class PocketSphinxASR(Model):
    name = "pocketsphinx"

    def __init__(
        self,
        *,
        hmm: AcousticModel = None,
        lm: LanguageModel = None,
        dictionary: Dictionary = None,
        workers: Annotated[int, Arg("worker processes decoding at once", ge=1)] = 1,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.paths: dict[str, Path] = model_paths(hmm, lm, dictionary, flag="--asr_args")
        self.workers = int(workers)
        # spawned, not forked: the run has threads (an event loop, the feed) a fork would copy mid-step
        self._pool = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start,
            initargs=({k: str(v) for k, v in self.paths.items()},),
        )

    @property
    def identity(self) -> dict[str, Any]:
        return paths_identity(self.paths)  # = `--model pocketsphinx`'s: the same transcripts

    @property
    def request_chunk_size(self) -> int:
        return max(self.batch_size, 2 * self.workers)

    def generate(self, requests: list[Request]) -> list[Response]:
        started = time.perf_counter()
        pending: list[list[Future[str]]] = [
            [self._pool.submit(_transcribe, c.samples, c.sampling_rate) for c in r.clips] for r in requests
        ]
        out = []
        for futures in pending:
            if not futures:
                out.append(
                    Response(text=None, error="pocketsphinx: the request holds no audio to transcribe")
                )
                continue
            texts = [f.result() for f in futures]
            out.append(
                Response(text=" ".join(t for t in texts if t), latency_s=time.perf_counter() - started)
            )
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
