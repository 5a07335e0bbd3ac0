"""Whisper's `BasicTextNormalizer` in its default configuration (no diacritic removal, no letter splitting),
which ALICE applies to chain-of-thought ASR transcripts before WER.

Copied in substance from the Whisper repository (openai/whisper, whisper/normalizers/basic.py, MIT licence,
Copyright (c) 2022 OpenAI) as carried by Hugging Face transformers
(transformers/models/whisper/english_normalizer.py, Apache License 2.0, Copyright 2022 The OpenAI team and
The HuggingFace Team), so that scoring needs neither package. tests/benchmarks/alice/test_alice_whisper_basic.py checks it
against the transformers copy when that is installed.
"""

from __future__ import annotations

import re
import unicodedata


def remove_symbols(s: str) -> str:
    """Replace markers, symbols and punctuation with a space, keeping diacritics."""
    return "".join(
        " " if unicodedata.category(c)[0] in "MSP" else c for c in unicodedata.normalize("NFKC", s)
    )


class BasicTextNormalizer:
    def __call__(self, s: str) -> str:
        s = s.lower()
        s = re.sub(r"[<\[][^>\]]*[>\]]", "", s)  # remove words between brackets
        s = re.sub(r"\(([^)]+?)\)", "", s)  # remove words between parenthesis
        s = remove_symbols(s).lower()
        return re.sub(r"\s+", " ", s)  # replace any successive whitespace characters with a space
