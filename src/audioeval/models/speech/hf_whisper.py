"""`--asr hf`: a Whisper checkpoint through transformers' automatic-speech-recognition pipeline.

    --asr hf --asr_args pretrained=/models/whisper-large-v3,device=cuda,batch=8,language=en

`pretrained` is a local folder (or a Hub name, which transformers then downloads: the user's choice). Clips are
resampled to the feature extractor's rate (16 kHz) and decoded greedily (`max_new_tokens`, default 440);
`batch` clips go through the pipeline together. The cache identity holds a fingerprint of the checkpoint's
files, so another checkpoint in the same folder is transcribed afresh.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

from audioeval.audio.dsp import resample
from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.models.fingerprint import fingerprint
from audioeval.types import Request, Response


class WhisperASR(Model):
    name = "hf"

    def __init__(
        self,
        *,
        pretrained: Annotated[str, Arg("a Whisper checkpoint folder, or a Hub id", min_length=1)],
        device: Annotated[str, Arg("where it runs, e.g. `cuda`")] = "cpu",
        batch: Annotated[int, Arg("clips per pipeline call", ge=1)] = 8,
        language: Annotated[
            str | None, Arg("the spoken language (e.g. `en`); detected when not given")
        ] = None,
        max_new_tokens: Annotated[int, Arg("the most tokens of one transcript", ge=1)] = 440,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            from transformers import pipeline
        except ImportError as err:
            raise ModelError("--asr hf needs transformers: pip install 'audioeval[hf]'") from err
        self.pretrained = str(pretrained)
        self.local = Path(self.pretrained).expanduser().is_dir()
        self.batch, self.language, self.max_new_tokens = int(batch), language, int(max_new_tokens)
        try:
            self.pipe = pipeline("automatic-speech-recognition", model=self.pretrained, device=device)
        except (OSError, ValueError) as err:
            raise ModelError(
                f"--asr_args pretrained={pretrained}: not a loadable Whisper checkpoint ({str(err)[:200]})."
            ) from err
        extractor: Any = self.pipe.feature_extractor
        self.rate = int(extractor.sampling_rate)

    @property
    def identity(self) -> dict[str, Any]:
        where = fingerprint(Path(self.pretrained).expanduser()) if self.local else self.pretrained
        return {
            "asr": self.name,
            "pretrained": where,
            "language": self.language,
            "max_new_tokens": self.max_new_tokens,
        }

    @property
    def request_chunk_size(self) -> int:
        return max(self.batch_size, self.batch)

    def generate(self, requests: list[Request]) -> list[Response]:
        started = time.perf_counter()
        clips = [r.clips[0] for r in requests if len(r.clips) == 1]
        inputs: Any = [
            {"raw": resample(c.samples, c.sampling_rate, self.rate), "sampling_rate": self.rate}
            for c in clips
        ]
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": False}
        if self.language:
            kwargs["language"] = self.language
        heard = iter(self.pipe(inputs, batch_size=self.batch, generate_kwargs=kwargs) if inputs else [])
        elapsed = (time.perf_counter() - started) / max(1, len(inputs))
        out = []
        for request in requests:
            if len(request.clips) != 1:
                out.append(Response(text=None, error=f"hf ASR: expected one clip, got {len(request.clips)}"))
            else:
                out.append(Response(text=str(next(heard)["text"]).strip(), latency_s=elapsed))
        return out
