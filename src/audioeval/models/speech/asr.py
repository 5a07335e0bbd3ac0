"""The ASR of spoken answers, by `--asr` name: `pocketsphinx` (offline, the default when the model speaks; a
smoke-test ASR), `openai` (an `/audio/transcriptions` endpoint), `hf` (a local Whisper checkpoint through
transformers' pipeline) and `none`. Each is a model backend whose requests hold one clip and whose answer is
its transcript, so ASR requests go through the one serving path (cached by the audio's hash and the ASR's
identity, concurrent, failures counted)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from audioeval.errors import ModelError, UsageError, unknown_name_message
from audioeval.models.base import Model, check_init_args

ASR_BACKENDS = {
    "pocketsphinx": "audioeval.models.speech.pocketsphinx_worker:PocketSphinxASR",
    "openai": "audioeval.models.speech.openai_transcriptions:OpenAITranscriptionASR",
    "hf": "audioeval.models.speech.hf_whisper:WhisperASR",
}
NO_ASR = "none"
DEFAULT_ASR = "pocketsphinx"
ASR_NAMES = (*ASR_BACKENDS, NO_ASR)


def check_asr_name(name: str) -> None:
    if name not in ASR_NAMES:
        raise UsageError("--asr: " + unknown_name_message("ASR", name, ASR_NAMES))


def asr_class(name: str) -> type[Model]:
    check_asr_name(name)
    where, _, attr = ASR_BACKENDS[name].rpartition(":")
    try:
        return getattr(importlib.import_module(where), attr)
    except ImportError as err:
        raise UsageError(f"--asr {name}: a dependency is missing ({err.name or err}).") from err


def check_asr_args(name: str | None, args: dict[str, Any]) -> None:
    """--asr_args against the declarations of the ASR they go to (`--asr`, else the default), before the run
    starts: a UsageError naming the flag."""
    name = name or DEFAULT_ASR
    check_asr_name(name)
    if name == NO_ASR:
        if args:
            raise UsageError("--asr_args: --asr none takes no arguments.")
        return
    try:
        check_init_args(asr_class(name), args)
    except ModelError as err:
        raise UsageError(f"--asr {name}: {str(err).replace('--model_args', '--asr_args')}") from err


def create_asr(name: str, args: dict[str, Any]) -> Model | None:
    """The ASR backend, or None for `--asr none`; bad --asr_args are a UsageError naming the flag."""
    check_asr_args(name, args)
    if name == NO_ASR:
        return None
    try:
        return asr_class(name)(**args)
    except ModelError as err:
        raise UsageError(f"--asr {name}: {str(err).replace('--model_args', '--asr_args')}") from err


def asr_model_name(asr: Model) -> str | None:
    """Which model an ASR runs, as reports name it beside the ASR: the endpoint's model (`openai`), the
    checkpoint (`hf`), the acoustic model's folder (`pocketsphinx`)."""
    settings = getattr(asr, "settings", None)
    if settings is not None and getattr(settings, "model", None):
        return str(settings.model)
    pretrained = getattr(asr, "pretrained", None)
    if pretrained:
        return str(pretrained)
    hmm = (getattr(asr, "paths", None) or {}).get("hmm")
    return Path(hmm).name if hmm else None
