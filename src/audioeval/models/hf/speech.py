"""Speech output of the `hf` backend: `--model_args audio_output=true[,speaker=NAME,talker_max_new_tokens=N]`.

Qwen3-Omni (`Qwen3OmniMoeForConditionalGeneration`) answers in text and speech in one `generate` call: the
thinker writes the text, the talker turns it into codec codes, the code2wav vocoder into a 24 kHz waveform.
Its speakers are named in its config (`talker_config.speaker_id`). Qwen2.5-Omni's talker is not wired here:
its speakers live in a separate `spk_dict.pt`.

Everything is checked from config.json before the weights load: the family, that the checkpoint has a talker
(`enable_audio_output`; the Thinking release has none) and the speaker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from audioeval.errors import ModelError
from audioeval.models.hf.checkpoint import Checkpoint
from audioeval.types import AudioClip

SPEECH_SAMPLING_RATE = 24000  # Qwen3-Omni's code2wav: 1,920 samples per 12.5 Hz code frame
DEFAULT_SPEAKER = "ethan"  # transformers' default for Qwen3-Omni
DEFAULT_TALKER_MAX_NEW_TOKENS = 4096  # transformers' default: about 5.5 minutes of speech
# What transformers raises (5.24) when the talker made no speech code: nothing to decode.
_NO_CODES = "stack expects a non-empty TensorList"


@dataclass(frozen=True)
class SpeechOutput:
    speaker: str  # lower case, as the config names it
    talker_max_new_tokens: int = DEFAULT_TALKER_MAX_NEW_TOKENS

    def identity(self) -> dict[str, Any]:
        return {"speaker": self.speaker, "talker_max_new_tokens": self.talker_max_new_tokens}


def speakers_of(checkpoint: Checkpoint) -> list[str]:
    talker = checkpoint.config.get("talker_config") or {}
    return sorted(str(name).lower() for name in (talker.get("speaker_id") or {}))


def open_speech(
    checkpoint: Checkpoint, speaker: str | None, talker_max_new_tokens: int | None
) -> SpeechOutput:
    """The speech settings, or a ModelError naming the checkpoint when it cannot speak as asked."""
    family = checkpoint.family
    if family.speech_class is None:
        raise ModelError(
            f"{checkpoint.path}: --model_args audio_output=true: the hf backend has no speech output for "
            f"{family.title}. {family.speech_note or ''} It answers in speech for Qwen3-Omni checkpoints with a "
            "talker (model_type qwen3_omni_moe); drop audio_output to score this model's text."
        )
    speakers = speakers_of(checkpoint)
    if not checkpoint.config.get("enable_audio_output", True) or not speakers:
        raise ModelError(
            f"{checkpoint.path}: --model_args audio_output=true: this checkpoint has no talker "
            "(config.json: enable_audio_output is false or talker_config names no speakers; the Thinking and "
            "Captioner releases answer in text only). Use an Instruct checkpoint, or drop audio_output."
        )
    if speaker:
        name = str(speaker).lower()
    else:
        name = DEFAULT_SPEAKER if DEFAULT_SPEAKER in speakers else speakers[0]
    if name not in speakers:
        raise ModelError(
            f"{checkpoint.path}: --model_args speaker={speaker}: unknown speaker. "
            f"This checkpoint's speakers: {', '.join(speakers)}."
        )
    limit = DEFAULT_TALKER_MAX_NEW_TOKENS if talker_max_new_tokens is None else int(talker_max_new_tokens)
    if limit < 1:
        raise ModelError(f"--model_args talker_max_new_tokens={limit}: must be at least 1.")
    return SpeechOutput(speaker=name, talker_max_new_tokens=limit)


def speak(model: Any, inputs: dict[str, Any], speech: SpeechOutput, thinker_kwargs: dict[str, Any]) -> Any:
    """One thinker + talker + vocoder call: (sequences, waveform as float32 samples), or None when the talker
    made no speech code (its first step is the prompt's: it ended speech at once, or had that step only). The
    talker samples with the model's own settings (transformers' defaults: top-k 50, temperature 0.9); the
    caller seeds torch first."""
    kwargs = {f"thinker_{key}": value for key, value in thinker_kwargs.items()}
    try:
        sequences, wav = model.generate(
            **inputs,
            generation_mode="audio",
            speaker=speech.speaker,
            talker_max_new_tokens=speech.talker_max_new_tokens,
            **kwargs,
        )
    except RuntimeError as err:
        if _NO_CODES in str(err):
            return None
        raise
    if isinstance(wav, list):  # a batch of several: one tensor per row
        wav = wav[0]
    return sequences, np.asarray(wav.reshape(-1).float().cpu().numpy(), dtype=np.float32)


def spoken_clip(samples: np.ndarray) -> AudioClip:
    return AudioClip.from_array(samples, SPEECH_SAMPLING_RATE)
