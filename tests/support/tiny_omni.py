"""A tiny random-weight Qwen3-Omni that answers in speech: thinker, talker and code2wav vocoder, built locally.

The same classes as the release (`Qwen3OmniMoeForConditionalGeneration` with `enable_audio_output`), with
hidden sizes of 32, one layer per stack, a byte-level BPE trained here, 4 codebooks of 32 codes and three
speakers named as the release's (Ethan, Chelsie, Aiden). The vocoder keeps the release's upsampling (1,920
samples per code, 24 kHz), so a waveform comes out in well under a second on a CPU. The weights are random:
the checkpoint proves the speech path (talker, vocoder, spoken answers, cache), not what is said.

    from tests.support.tiny_omni import build_tiny_speaking_omni
    build_tiny_speaking_omni("/tmp/omni")   # --model hf --model_args pretrained=/tmp/omni,audio_output=true
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from audioeval.errors import UsageError
from tests.support.tiny import (
    QWEN3_OMNI_CHAT_TEMPLATE,
    QWEN3_OMNI_NAMED,
    _save_model,
    _save_omni_processor,
    _seeded,
    _train_tokenizer,
    qwen3_moe_decoder,
    qwen3_omni_thinker_config,
)

TTS_SPECIALS = ("<|tts_pad|>", "<|tts_bos|>", "<|tts_eos|>")
SPEAKERS = ("ethan", "chelsie", "aiden")
CODEBOOK_SIZE = 32
CODE_GROUPS = 4  # the talker's code groups = the vocoder's quantizers
# transformers suppresses the talker's top 1,024 ids (its special codec tokens) except the end of speech, so
# the speech codes are the ids below them: 1,024 + 32 + 16 ids, the last 16 the codec specials and speakers.
_TALKER_VOCAB = 1024 + CODEBOOK_SIZE + 16
# The role words (`system`, `user`, `assistant`) must be one token each: the talker finds the turns by the
# token after <|im_start|>. A vocabulary of 640 merges them (384, the other tiny checkpoints' size, does not).
_VOCAB_SIZE = 640
_SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}


def _token_id(tokenizer: Any, token: str) -> int:
    ids = tokenizer.encode(token, add_special_tokens=False)
    if len(ids) != 1:
        raise UsageError(
            f"tiny Qwen3-Omni: {token!r} is {len(ids)} tokens in the trained vocabulary, not one."
        )
    return int(ids[0])


def _talker_config(thinker: dict[str, Any]) -> dict[str, Any]:
    top = _TALKER_VOCAB
    head_dim = _SMALL["hidden_size"] // _SMALL["num_attention_heads"]
    return {
        "text_config": {
            **qwen3_moe_decoder(_SMALL),
            "vocab_size": top,
            # read by the talker's shared expert but not a field of its config class (transformers 5.24)
            "shared_expert_intermediate_size": 32,
        },
        "code_predictor_config": {
            **_SMALL,
            "vocab_size": CODEBOOK_SIZE,
            "num_key_value_heads": 1,
            "head_dim": head_dim,
            "num_code_groups": CODE_GROUPS,
        },
        "num_code_groups": CODE_GROUPS,
        "thinker_hidden_size": thinker["text_config"]["hidden_size"],
        "accept_hidden_layer": thinker["text_config"]["num_hidden_layers"],  # the thinker's last layer
        "spatial_merge_size": 2,  # read by the talker, not a field of its config class (transformers 5.24)
        "codec_pad_id": top - 16,
        "codec_bos_id": top - 15,
        "codec_eos_token_id": top - 14,
        "codec_nothink_id": top - 13,
        "codec_think_bos_id": top - 12,
        "codec_think_eos_id": top - 11,
        "speaker_id": {name: top - 10 + i for i, name in enumerate(SPEAKERS)},
        **{key: thinker[key] for key in ("audio_token_id", "image_token_id", "video_token_id")},
        "audio_start_token_id": thinker["audio_start_token_id"],
        "vision_start_token_id": thinker["vision_start_token_id"],
    }


def _code2wav_config() -> dict[str, Any]:
    return {
        "codebook_size": CODEBOOK_SIZE,
        "num_quantizers": CODE_GROUPS,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "decoder_dim": 64,
        # The decoder's gain grows steeply with its weights: 0.02 (the default) gives a waveform of about
        # 1e-6 (silence once written as 16-bit PCM), 0.1 one clipped at 1. 0.08: peaks around 0.2.
        "initializer_range": 0.08,
    }


def _fill_talker_experts(model: Any) -> None:
    """transformers 5.24 leaves the talker's MoE expert weights as they come from torch.empty (its weight
    initialisation does not reach them): memory garbage that differs on every build and can hold inf or NaN,
    which made talker sampling fail now and then. Fill them from the seeded generator like every other weight."""
    import torch

    std = float(model.config.talker_config.text_config.initializer_range)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith("talker.") and ".mlp.experts." in name:
                param.normal_(0.0, std)


def build_tiny_speaking_omni(out_dir: str | Path, seed: int = 0) -> Path:
    """Build the checkpoint into `out_dir` (created; must be empty or absent). Returns the folder."""
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; choose a new folder for the tiny Qwen3-Omni checkpoint.")
    specials = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *QWEN3_OMNI_NAMED.values(), *TTS_SPECIALS)
    tokenizer = _train_tokenizer(specials, QWEN3_OMNI_NAMED, vocab_size=_VOCAB_SIZE)
    thinker = qwen3_omni_thinker_config(tokenizer)
    config = Qwen3OmniMoeConfig(
        thinker_config=thinker,
        talker_config=_talker_config(thinker),
        code2wav_config=_code2wav_config(),
        enable_audio_output=True,
        im_start_token_id=_token_id(tokenizer, "<|im_start|>"),
        im_end_token_id=_token_id(tokenizer, "<|im_end|>"),
        tts_pad_token_id=_token_id(tokenizer, "<|tts_pad|>"),
        tts_bos_token_id=_token_id(tokenizer, "<|tts_bos|>"),
        tts_eos_token_id=_token_id(tokenizer, "<|tts_eos|>"),
        system_token_id=_token_id(tokenizer, "system"),
        user_token_id=_token_id(tokenizer, "user"),
        assistant_token_id=_token_id(tokenizer, "assistant"),
    )
    _seeded(seed)
    model = Qwen3OmniMoeForConditionalGeneration(config)
    _fill_talker_experts(model)
    out.mkdir(parents=True, exist_ok=True)
    _save_omni_processor(out, tokenizer, QWEN3_OMNI_CHAT_TEMPLATE, "Qwen3OmniMoeProcessor")
    _save_model(model, tokenizer, out)
    return out
