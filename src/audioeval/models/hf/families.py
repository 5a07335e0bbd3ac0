"""Per-family facts the `hf` and `vllm` backends need beyond what AutoProcessor and the chat template say.

One `FamilyAdapter` per model family: which `config.json` model types it covers, the transformers class to
load, the default system prompt the reference evaluations use, how an audio clip is written inline, the
longest clip its processor accepts, and the few processor quirks that need a workaround. Everything else
(the audio placeholder token, the template, the feature extractor) comes from the checkpoint itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from audioeval.errors import ModelError

#: Bump when the way prompts or inputs are built changes; it is part of the backend identity (cache key).
ADAPTER_VERSION = 1

QWEN_OMNI_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)

PLACEMENTS = ("template", "inline")


def _audio_token(processor: Any) -> str:
    return processor.audio_token


def _wrapped_audio_token(processor: Any) -> str:
    """`<bos><token><eos>` as the Qwen families write one clip (e.g. <|audio_bos|><|AUDIO|><|audio_eos|>)."""
    return f"{processor.audio_bos_token}{processor.audio_token}{processor.audio_eos_token}"


def _no_limit(processor: Any) -> float | None:
    return None


def _whisper_window(processor: Any) -> float | None:
    """Whisper-style extractors pad or cut every clip to one window (`n_samples`; 30 s in Qwen2-Audio's release)."""
    fe = processor.feature_extractor
    return fe.n_samples / float(fe.sampling_rate)


def _audio_flamingo_limit(processor: Any) -> float | None:
    """Audio Flamingo 3 splits a clip into 30 s windows and keeps at most `max_audio_len` seconds."""
    return float(processor.max_audio_len)


def _extractor_max_length(processor: Any) -> float | None:
    """Gemma 3n's extractor truncates at its `max_length` call default (480,000 samples = 30 s)."""
    fe = processor.feature_extractor
    default = inspect.signature(fe.__call__).parameters.get("max_length")
    if default is None or default.default in (None, inspect.Parameter.empty):
        return None
    return default.default / float(fe.sampling_rate)


@dataclass(frozen=True)
class FamilyAdapter:
    name: str  # short id used in the backend identity and in the docs
    title: str
    model_types: tuple[str, ...]  # config.json `model_type` values this adapter covers
    model_class: str  # transformers class that loads the checkpoint for text generation
    default_system_prompt: str | None = None
    system_role: bool = True  # False: the system text is prepended to the first user turn instead
    placement: str = "template"  # default audio placement: by the chat template, or inline in the text
    inline_placeholder: Callable[[Any], str] = _audio_token
    audio_limit: Callable[[Any], float | None] = _no_limit
    # The processor builds its token ids inside apply_chat_template (Voxtral, via mistral-common).
    tokenized_template: bool = False
    # The processor checks one clip per prompt although the model takes several (Audio Flamingo 3).
    relax_one_clip_check: bool = False
    # The processor has a video processor (needs torchvision) that audio-only prompts never use.
    video_processor_optional: bool = False
    processor_kwargs: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    # The transformers class that answers in text and speech (`--model_args audio_output=true`; hf/speech.py),
    # None where the hf backend has no speech output for the family; `speech_note` says why in its error.
    speech_class: str | None = None
    speech_note: str = ""


FAMILIES: tuple[FamilyAdapter, ...] = (
    FamilyAdapter(
        name="qwen2_audio",
        title="Qwen2-Audio",
        model_types=("qwen2_audio",),
        model_class="Qwen2AudioForConditionalGeneration",
        default_system_prompt="You are a helpful assistant.",
        inline_placeholder=_wrapped_audio_token,
        audio_limit=_whisper_window,
        notes="Its chat template writes each clip as `Audio n: <|audio_bos|><|AUDIO|><|audio_eos|>` + newline.",
    ),
    FamilyAdapter(
        name="qwen2_5_omni",
        title="Qwen2.5-Omni (thinker, text output)",
        model_types=("qwen2_5_omni", "qwen2_5_omni_thinker"),
        model_class="Qwen2_5OmniThinkerForConditionalGeneration",
        default_system_prompt=QWEN_OMNI_SYSTEM_PROMPT,
        inline_placeholder=_wrapped_audio_token,
        audio_limit=_whisper_window,
        video_processor_optional=True,
        notes="Only the thinker is loaded (the `thinker.` weights of the full checkpoint); no speech output.",
        speech_note="Its talker's speakers live in spk_dict.pt, outside config.json; that path is not wired.",
    ),
    FamilyAdapter(
        name="qwen3_omni",
        title="Qwen3-Omni (thinker, text output)",
        model_types=("qwen3_omni_moe", "qwen3_omni_moe_thinker"),
        model_class="Qwen3OmniMoeThinkerForConditionalGeneration",
        default_system_prompt=QWEN_OMNI_SYSTEM_PROMPT,
        inline_placeholder=_wrapped_audio_token,
        video_processor_optional=True,
        notes="Its extractor pads to the longest clip of a batch; see docs/models.md on batch invariance. "
        "With audio_output=true the full model (thinker, talker, vocoder) loads and answers in speech.",
        speech_class="Qwen3OmniMoeForConditionalGeneration",
    ),
    FamilyAdapter(
        name="phi4_multimodal",
        title="Phi-4-multimodal",
        model_types=("phi4_multimodal",),
        model_class="Phi4MultimodalForCausalLM",
        notes="The transformers-native checkpoint; the remote-code `phi4mm` release is not supported.",
    ),
    FamilyAdapter(
        name="voxtral",
        title="Voxtral",
        model_types=("voxtral",),
        model_class="VoxtralForConditionalGeneration",
        system_role=False,
        tokenized_template=True,
        notes="Prompts are tokenized by mistral-common inside apply_chat_template (pip install mistral-common).",
    ),
    FamilyAdapter(
        name="gemma3n",
        title="Gemma 3n",
        model_types=("gemma3n",),
        model_class="Gemma3nForConditionalGeneration",
        audio_limit=_extractor_max_length,
    ),
    FamilyAdapter(
        name="audio_flamingo3",
        title="Audio Flamingo 3",
        model_types=("audioflamingo3",),
        model_class="AudioFlamingo3ForConditionalGeneration",
        placement="inline",
        audio_limit=_audio_flamingo_limit,
        relax_one_clip_check=True,
        notes="Trained with one clip per prompt; several clips are accepted but out of its training format.",
    ),
)


def supported_model_types() -> list[str]:
    return sorted(t for f in FAMILIES for t in f.model_types)


def supported_families_text() -> str:
    return "; ".join(f"{f.title} ({', '.join(f.model_types)})" for f in FAMILIES)


def family_for(model_type: str | None, source: str) -> FamilyAdapter:
    """The adapter for a config.json `model_type`; a clear error naming the supported ones otherwise."""
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    hint = ""
    if model_type == "phi4mm":
        hint = (
            " This is the remote-code release of Phi-4-multimodal; use a transformers-native conversion "
            "(model_type phi4_multimodal)."
        )
    raise ModelError(
        f"{source}: model_type {model_type!r} has no adapter in the `hf` backend.{hint} "
        f"Supported: {supported_families_text()}. "
        "A new family needs an entry in audioeval/models/hf/families.py (see docs/models.md)."
    )


def family_by_name(name: str) -> FamilyAdapter:
    for family in FAMILIES:
        if family.name == name:
            return family
    names = ", ".join(f.name for f in FAMILIES)
    raise ModelError(f"--model_args family={name!r}: unknown family. Known: {names}.")
