"""Fixtures for the ADU-Bench, cascade and pocketsphinx tests (all offline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from adu_helpers import write_jsonl

from audioeval.audio.wav import encode_wav


@pytest.fixture(scope="session", autouse=True)
def _speech_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep synthesised speech of the tests out of the user's cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AUDIOEVAL_CACHE", str(tmp_path_factory.mktemp("audioeval_cache")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.tiny_chat_lm import build_tiny_chat_lm

    return build_tiny_chat_lm(tmp_path_factory.mktemp("tiny_chat_lm"))


@pytest.fixture
def upstream_dir(tmp_path: Path) -> Path:
    """A miniature copy of the released ADU-Bench folder layout with short tone clips at 24 kHz."""
    root = tmp_path / "ADU-Bench"
    t = np.arange(2400) / 24000.0
    clip = encode_wav(0.2 * np.sin(2 * np.pi * 220 * t), 24000)
    rows = {
        "ADU-Skill/physics.jsonl": [
            {
                "question": "Why is the sky blue?",
                "answer": "Rayleigh scattering.",
                "source": "MMLU",
                "category": "physics",
                "audio": "ADU-Skill/physics/0001_en_AndrewMultilingualNeural_rate_+10.wav",
            },
            {
                "question": "What is inertia?",
                "answer": "Resistance to changes in motion.",
                "source": "MMLU",
                "category": "",
                "audio": "ADU-Skill/physics/27cc7ee8a0404f9c_11130_17850.wav",
            },
        ],
        "ADU-Skill/math.jsonl": [
            {
                "question": "What is 2+2?",
                "answer": "4",
                "source": "GSM8K",
                "category": "",
                "audio": "ADU-Skill/math/0002_en_BrianMultilingualNeural_pitch_-10.wav",
            },
        ],
        "ADU-Multilingual/chinese.jsonl": [
            {
                "question": "你好吗？",
                "answer": "我很好。",
                "source": "Alpaca",
                "category": "",
                "audio": "ADU-Multilingual/chinese/0036_zh_YunxiNeural.wav",
            },
        ],
    }
    for rel, items in rows.items():
        jsonl = root / "input" / rel
        jsonl.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(jsonl, items)
        for item in items:
            wav = root / item["audio"]
            wav.parent.mkdir(parents=True, exist_ok=True)
            wav.write_bytes(clip)
    return root
