"""ALICE's chain-of-thought WER normalizer works without transformers and matches Whisper's own."""

from __future__ import annotations

import pytest

from audioeval.benchmarks.alice.whisper_basic import BasicTextNormalizer
from audioeval.resources import metrics_dir
from audioeval.run.requirements import needs_of_files

SAMPLES = [
    "Hello, World! It's 3:45 p.m. (roughly) [noise] <unk>",
    "Café déjà vu — naïve coöperation; œuvre ß Straße",
    "  tabs\tand\nnewlines  ",
    "「日本語」の テキスト、and ÉMOJI 🎉 ✓ ½ ﬁ",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "nested (a (b) c) [x [y] z] <p><q>",
    "",
]


def test_matches_whisper_basic_text_normalizer():
    english = pytest.importorskip("transformers.models.whisper.english_normalizer")
    theirs, ours = english.BasicTextNormalizer(), BasicTextNormalizer()
    for text in SAMPLES:
        assert ours(text) == theirs(text), text


def test_alice_scoring_needs_no_transformers():
    needed = {n.package for n in needs_of_files([metrics_dir() / "alice_task" / "alice_task.py"])}
    assert "jiwer" in needed  # the check does follow alice_task into audioeval.benchmarks.alice.wer
    assert "transformers" not in needed
