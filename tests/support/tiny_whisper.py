"""A tiny random-weight Whisper checkpoint built locally (no download), for `--asr hf` tests: a genuine
`WhisperForConditionalGeneration` with hidden size 32 and one layer each side, a byte-level BPE of a few
hundred tokens trained here (saved as Whisper's vocab.json and merges.txt, with Whisper's special tokens) and
the real feature extractor (80 mel bins, 30 s window). It loads through transformers' speech-recognition
pipeline like a released checkpoint; what it transcribes is noise, the same for the same audio.

    from tests.support.tiny_whisper import build_tiny_whisper
"""

from __future__ import annotations

import json
from pathlib import Path

SPECIALS = (
    "<|startoftranscript|>", "<|en|>", "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
    "<|nocaptions|>", "<|notimestamps|>",
)  # fmt: skip
EOT = "<|endoftext|>"
_WORDS = "the answer is low high zero one two three four five six seven eight nine yes no".split()


def _write_bpe(out: Path, vocab_size: int = 300) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator([" ".join(_WORDS[i:] + _WORDS[:i]) for i in range(len(_WORDS))], trainer)
    model = json.loads(tok.to_str())["model"]
    (out / "vocab.json").write_text(json.dumps(model["vocab"]), encoding="utf-8")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    (out / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")


def build_tiny_whisper(out_dir: str | Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _write_bpe(out)
    tokenizer = WhisperTokenizer(
        str(out / "vocab.json"),
        str(out / "merges.txt"),
        unk_token=EOT,
        bos_token=EOT,
        eos_token=EOT,
        pad_token=EOT,
    )
    tokenizer.add_special_tokens({"additional_special_tokens": list(SPECIALS)})
    ids = {name: int(tokenizer.convert_tokens_to_ids(name)) for name in (EOT, *SPECIALS)}  # type: ignore[arg-type]
    config = WhisperConfig(
        vocab_size=len(tokenizer), num_mel_bins=80, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_source_positions=1500, max_target_positions=64, decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids[EOT], pad_token_id=ids[EOT], bos_token_id=ids[EOT],
        begin_suppress_tokens=None, suppress_tokens=None,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=ids[EOT],
        pad_token_id=ids[EOT],
        no_timestamps_token_id=ids["<|notimestamps|>"],
        is_multilingual=False,
        max_new_tokens=8,
    )
    model.save_pretrained(out)
    WhisperProcessor(WhisperFeatureExtractor(feature_size=80), tokenizer).save_pretrained(out)
    return out
