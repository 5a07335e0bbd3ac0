"""What the `hf` and `vllm` backends share: the checkpoint, its processor and chat template, the prompt style
and the audio preparation. Everything that decides the prompt text and the audio a model sees is here, so
both backends send the same inputs for the same request."""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.hf.audio import AudioPreparer
from audioeval.models.hf.checkpoint import Checkpoint, fingerprint, loaded_checkpoint, open_checkpoint
from audioeval.models.hf.families import ADAPTER_VERSION, PLACEMENTS
from audioeval.models.hf.loading import audio_sampling_rate, load_processor, prepare_processor
from audioeval.models.hf.prompt import PromptStyle, render_prompt
from audioeval.types import Request

# The --model_args the `hf` and `vllm` backends share, declared once (config/fields.py)
Pretrained = Annotated[
    str, Arg("checkpoint folder, or a Hub id (fetched with huggingface_hub)", min_length=1)
]
Revision = Annotated[str | None, Arg("Hub revision")]
FamilyName = Annotated[str | None, Arg("force an adapter (names below)", shown_default="from `model_type`")]
TrustRemoteCode = Annotated[bool, Arg("enabled in transformers only when given")]
SystemPrompt = Annotated[
    str | None,
    Arg(
        "quote it: `--model_args \"pretrained=...,system_prompt='Be brief, please.'\"`; `system_prompt=''` for none",
        shown_default="family default",
    ),
]
AudioPlacement = Annotated[
    Literal["template", "inline"] | None,
    Arg(
        "where the clips go: the chat template's audio blocks, or placeholders inline",
        shown_default="family default",
    ),
]
ChatTemplate = Annotated[str | None, Arg("path to a Jinja template", shown_default="checkpoint's")]
MaxAudioSeconds = Annotated[
    float | None, Arg("cut clips longer than this (recorded per sample)", gt=0, shown_default="family limit")
]
MaxNewTokens = Annotated[int, Arg("used when the task sets none", ge=1)]


@dataclass
class AudioChatFrontend:
    checkpoint: Checkpoint
    processor: Any
    style: PromptStyle
    audio: AudioPreparer

    @classmethod
    def open(
        cls,
        pretrained: str | None,
        *,
        revision: str | None = None,
        family: str | None = None,
        trust_remote_code: bool = False,
        chat_template: str | None = None,
        **style: Any,
    ) -> AudioChatFrontend:
        """A checkpoint folder or Hub id; `style`: system_prompt, audio_placement, max_audio_seconds."""
        checkpoint = open_checkpoint(pretrained, revision, family)
        _check_placement(checkpoint, style.get("audio_placement"))
        processor = load_processor(checkpoint, bool(trust_remote_code), chat_template)
        return cls._assemble(checkpoint, processor, **style)

    @classmethod
    def of_loaded(
        cls,
        model: Any,
        processor: Any,
        *,
        family: str | None = None,
        chat_template: str | None = None,
        **style: Any,
    ) -> AudioChatFrontend:
        """A model and processor the caller loaded and holds (a training loop's). The processor is copied, so
        setting it up for the harness (left padding, a chat template) leaves the caller's own as it was."""
        checkpoint = loaded_checkpoint(model, family)
        _check_placement(checkpoint, style.get("audio_placement"))
        if processor is None:
            raise ModelError(
                "--model_args processor=...: a model given in memory needs its processor too "
                "(AutoProcessor.from_pretrained(...) of the same checkpoint)."
            )
        return cls._assemble(
            checkpoint, prepare_processor(copy.deepcopy(processor), checkpoint, chat_template), **style
        )

    @classmethod
    def _assemble(
        cls,
        checkpoint: Checkpoint,
        processor: Any,
        system_prompt: str | None = None,
        audio_placement: str | None = None,
        max_audio_seconds: float | None = None,
    ) -> AudioChatFrontend:
        adapter = checkpoint.family
        rate = audio_sampling_rate(processor, str(checkpoint.path))
        limit = adapter.audio_limit(processor)
        if max_audio_seconds is not None:
            limit = min(float(max_audio_seconds), limit) if limit is not None else float(max_audio_seconds)
        style = PromptStyle(
            family=adapter,
            placement=audio_placement or adapter.placement,
            system_prompt=adapter.default_system_prompt if system_prompt is None else str(system_prompt),
            source=str(checkpoint.path),
        )
        audio = AudioPreparer(rate, limit, f"{adapter.title} ({checkpoint.path.name})")
        return cls(checkpoint=checkpoint, processor=processor, style=style, audio=audio)

    @property
    def sampling_rate(self) -> int:
        return self.audio.sampling_rate

    def prompt(self, request: Request) -> str:
        return render_prompt(request, self.style, self.processor)

    def identity(self) -> dict[str, Any]:
        """The parts of a backend identity that the inputs depend on."""
        template = self.processor.chat_template or ""
        return {
            "pretrained": self.checkpoint.pretrained,
            # a model in memory has no files to fingerprint: its weights are the caller's, and its answers are
            # not cached unless the caller asks (api/evaluate.py)
            "fingerprint": "in memory" if self.checkpoint.in_memory else fingerprint(self.checkpoint.path),
            "family": self.checkpoint.family.name,
            "adapter_version": ADAPTER_VERSION,
            "audio_placement": self.style.placement,
            "system_prompt": self.style.system_prompt,
            "chat_template_sha256": hashlib.sha256(str(template).encode()).hexdigest(),
            "max_audio_seconds": self.audio.max_seconds,
        }


def _check_placement(checkpoint: Checkpoint, audio_placement: str | None) -> None:
    adapter = checkpoint.family
    placement = audio_placement or adapter.placement
    if placement not in PLACEMENTS:
        raise ModelError(
            f"--model_args audio_placement={placement!r}: expected one of {', '.join(PLACEMENTS)}."
        )
    if adapter.tokenized_template and audio_placement == "inline":
        raise ModelError(
            f"--model_args audio_placement=inline: {adapter.title} prompts are built by its tokenizer."
        )
