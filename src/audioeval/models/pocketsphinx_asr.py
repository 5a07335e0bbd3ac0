"""`--model pocketsphinx`: offline speech recognition with CMU PocketSphinx (the `pocketsphinx` wheel ships
a US-English acoustic model, language model and dictionary), so nothing is downloaded.

As a model it answers each request with the transcript of the query audio (the episode's query clips when
the request carries its episode, else every clip in the request, in order), for ASR tasks and as the first
stage of `--model cascade`. Audio is resampled to 16 kHz mono PCM16, padded with a little silence so the
first and last words are not clipped. It recognises English only; expect rough transcripts of synthetic
voices (the benchmarks' docs give measured error rates).

The decoder's front end adapts to what it has heard (cepstral mean, noise estimate), so a reused decoder would
transcribe a clip differently depending on the clips decoded before it. Every utterance therefore starts from
the front end's initial state: a transcript depends only on its clip, whatever the order, batch or number of
processes.
"""

from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import AfterValidator

from audioeval.audio.dsp import resample
from audioeval.audio.wav import to_pcm16
from audioeval.config.fields import Arg, Problem
from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.models.fingerprint import fingerprint
from audioeval.types import AudioClip, Request, Response

RATE = 16000
PAD_SECONDS = 0.2


def _default_paths() -> dict[str, Path]:
    from pocketsphinx import get_model_path

    root = Path(get_model_path()) / "en-us"
    return {"hmm": root / "en-us", "lm": root / "en-us.lm.bin", "dict": root / "cmudict-en-us.dict"}


def query_clips(request: Request) -> list[AudioClip]:
    """The clips to transcribe: the episode's query clips when known, else all clips of the request."""
    clips = [c.audio for c in request.shown.query.clips] if request.shown is not None else []
    return clips or request.clips


def to_16k_pcm(clip: AudioClip) -> bytes:
    samples = resample(clip.samples, clip.sampling_rate, RATE)
    pad = np.zeros(int(PAD_SECONDS * RATE), dtype=np.float32)
    return to_pcm16(np.concatenate([pad, samples, pad])).tobytes()


ACOUSTIC_MODEL_FILES = ("mdef", "means", "variances", "transition_matrices")


def _acoustic_model_folder(value: str | None) -> str | None:
    """A folder holding a PocketSphinx acoustic model, checked before any worker process starts."""
    if value is None:
        return value
    folder = Path(value).expanduser()
    missing = [f for f in ACOUSTIC_MODEL_FILES if not (folder / f).is_file()]
    if not folder.is_dir() or missing:
        raise Problem(
            f"{folder} is not a PocketSphinx acoustic model folder (it has no {', '.join(missing)}); name the "
            "folder holding them, or leave hmm out for the wheel's en-us model."
        )
    return value


def _a_file(value: str | None) -> str | None:
    if value is not None and not Path(value).expanduser().is_file():
        raise Problem(f"no such file: {Path(value).expanduser()}.")
    return value


AcousticModel = Annotated[
    str | None,
    Arg("acoustic model folder", shown_default="the wheel's en-us"),
    AfterValidator(_acoustic_model_folder),
]
LanguageModel = Annotated[
    str | None,
    Arg("language model file (.lm.bin)", shown_default="the wheel's en-us"),
    AfterValidator(_a_file),
]
Dictionary = Annotated[
    str | None,
    Arg("pronunciation dictionary file", shown_default="the wheel's cmudict-en-us"),
    AfterValidator(_a_file),
]


def model_paths(
    hmm: str | None, lm: str | None, dictionary: str | None, flag: str = "--model_args"
) -> dict[str, Path]:
    """The acoustic model, language model and dictionary: the wheel's en-us ones unless given."""
    try:
        paths = _default_paths()
    except ImportError as err:
        raise ModelError("pocketsphinx is not installed: pip install pocketsphinx") from err
    for key, value in (("hmm", hmm), ("lm", lm), ("dict", dictionary)):
        if value is not None:
            paths[key] = Path(str(value)).expanduser()
    for key, path in paths.items():
        if not path.exists():
            arg = "dictionary" if key == "dict" else key
            raise ModelError(f"{flag} {arg}={path}: no such file or folder.")
    return paths


def paths_identity(paths: dict[str, Path]) -> dict[str, Any]:
    return {
        "model": "pocketsphinx",
        "version": metadata.version("pocketsphinx"),
        **{key: fingerprint(path, read_text_files=False) for key, path in paths.items()},
        "pad_seconds": PAD_SECONDS,
    }


class PocketSphinxModel(Model):
    name = "pocketsphinx"

    def __init__(
        self,
        *,
        hmm: AcousticModel = None,
        lm: LanguageModel = None,
        dictionary: Dictionary = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        paths = model_paths(hmm, lm, dictionary)
        from pocketsphinx import Decoder

        self.paths = paths
        self.decoder = Decoder(
            hmm=str(paths["hmm"]),
            lm=str(paths["lm"]),
            dict=str(paths["dict"]),
            samprate=RATE,
            loglevel="FATAL",
        )

    @property
    def identity(self) -> dict[str, Any]:
        return paths_identity(self.paths)

    def transcribe(self, clip: AudioClip) -> str:
        self.decoder.reinit_feat()  # forget the previous utterances' adaptation (see the module docstring)
        self.decoder.start_utt()
        self.decoder.process_raw(to_16k_pcm(clip), full_utt=True)
        self.decoder.end_utt()
        hypothesis = self.decoder.hyp()
        return hypothesis.hypstr.strip() if hypothesis is not None else ""

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            started = time.perf_counter()
            clips = query_clips(request)
            if not clips:
                out.append(
                    Response(text=None, error="pocketsphinx: the request holds no audio to transcribe")
                )
                continue
            text = " ".join(t for t in (self.transcribe(c) for c in clips) if t)
            out.append(Response(text=text, latency_s=time.perf_counter() - started))
        return out
