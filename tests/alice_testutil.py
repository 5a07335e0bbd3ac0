"""Helpers shared by the ALICE tests (tests/benchmarks/alice/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audioeval.audio.wav import encode_wav


@pytest.fixture(scope="module", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Synthesized speech and responses go to a temporary cache, not the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUDIOEVAL_CACHE", str(tmp_path_factory.mktemp("alice-cache")))
        yield


def tone_wav(path: Path, freq: float = 440.0, seconds: float = 0.3, rate: int = 16000) -> Path:
    t = np.arange(int(rate * seconds)) / rate
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_wav(0.2 * np.sin(2 * np.pi * freq * t), rate))
    return path


CAPITAL = "change_case:english_capital"
REPEAT = "combination:repeat_prompt"
END = "startend:end_checker"
JSON_ID = "detectable_format:json_format"


def write_layout(root: Path, *, ceq_rows: list[Any] | None = None, pool: dict | None = None) -> Path:
    """A miniature Speech-IFEval / ALICE copy: CEQ and CoT JSONL, test audio, demonstration pool, MMAU map."""
    audio = root / "data" / "audios"
    for i in range(3):
        tone_wav(audio / "Speech_emotion_recognition" / f"ser{i}.wav", 300 + 50 * i)
        tone_wav(audio / "Automatic_speech_recognition" / f"asr{i}.wav", 500 + 50 * i)
    tone_wav(audio / "MMAU" / "uuid-1.wav", 900)
    pool_audio = root / "in-context-examples" / "audios"
    for i in range(4):
        tone_wav(pool_audio / "general" / f"{i}.wav", 200 + 30 * i)
        tone_wav(pool_audio / "MMAU" / f"m{i}.wav", 700 + 30 * i)
    ser_q = 'What emotion is expressed? Choose the answer from "neutral", "happy", "sad" or "angry".'
    if ceq_rows is None:
        ceq_rows = [
            {
                "id": 1,
                "audio_filepath": "Speech_emotion_recognition/ser0.wav",
                "instruction": ser_q + "\nAnswer in capital letters only.",
                "dataset": "Speech_emotion_recognition",
                "metric": "accuracy",
                "instruction_id_list": [CAPITAL],
                "kwargs": [{}],
                "label": "sad",
            },
            {
                "id": 2,
                "audio_filepath": "Speech_emotion_recognition/ser1.wav",
                "instruction": ser_q + '\nStart your answer with "The answer is:".',
                "dataset": "Speech_emotion_recognition",
                "metric": "accuracy",
                "instruction_id_list": [REPEAT],
                "kwargs": [{"prompt_to_repeat": "The answer is:"}],
                "label": "angry",
            },
            {
                "id": 3,
                "audio_filepath": "Automatic_speech_recognition/asr0.wav",
                "instruction": 'Transcribe the audio.\nEnd with "Hope this helps."',
                "dataset": "Automatic_speech_recognition",
                "metric": "wer",
                "instruction_id_list": [END],
                "kwargs": [{"end_phrase": "Hope this helps."}],
                "label": "HELLO THERE WORLD",
            },
            {
                "id": 4,
                "audio_filepath": "MMAU/uuid-1.wav",
                "instruction": 'How many speakers? Choose the answer from "one", "two" or "three".\n'
                "Wrap your answer in JSON.",
                "dataset": "MMAU",
                "metric": "accuracy",
                "instruction_id_list": [JSON_ID],
                "kwargs": [{}],
                "label": "two",
            },
        ]
    cot_rows = [
        {
            "audio_filepath": "Speech_emotion_recognition/ser2.wav",
            "textual_audio": "[00:00:00 - 00:00:02] Kids are talking by the door(Gender: Female, Emotion: happy)",
            "instruction": ser_q + "\nThink step by step.",
            "dataset": "Speech_emotion_recognition",
            "metric": "cot",
        }
    ]

    def general(instruction: str, answers: list[Any]) -> list[dict[str, Any]]:
        return [
            {"audio_path": f"general/{i}.wav", "instruction": instruction, "ans": a}
            for i, a in enumerate(answers)
        ]

    if pool is None:
        pool = {
            "SER": {
                "closed_ended_questions": {
                    CAPITAL: general(
                        "Name the emotion.\nUse capital letters.", ["ANGRY", "SAD", "HAPPY", "NEUTRAL"]
                    ),
                    REPEAT: general(
                        'Name the emotion.\nBegin with "Verdict:".',
                        ["Verdict:angry", "Verdict:sad", "Verdict:happy", "Verdict:neutral"],
                    ),
                },
                "chain-of-thought": general(
                    "Name the emotion.\nReason first.", ["It is loud. Answer: angry"] * 4
                ),
            },
            "ASR": {
                "closed_ended_questions": {
                    END: general(
                        'Transcribe.\nFinish with "Done."',
                        ["i need shoes\nDone.", "the cup\nDone.", "hello\nDone.", "bye\nDone."],
                    )
                }
            },
            "MMAU": {
                "closed_ended_questions": {
                    "speech": {
                        "Reasoning": {
                            "Speaker Counting": {
                                JSON_ID: [
                                    {
                                        "audio_path": f"MMAU/m{i}.wav",
                                        "instruction": "How many?\nJSON.",
                                        "ans": {"Content": "one"},
                                    }
                                    for i in range(4)
                                ]
                            }
                        }
                    }
                }
            },
        }
    eval_dir = root / "data" / "eval_data"
    eval_dir.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in ceq_rows]
    (eval_dir / "closed_ended_questions_corrected_filtered.jsonl").write_text("\n".join(lines) + "\n")
    (eval_dir / "chain-of-thought_corrected_filtered.jsonl").write_text(
        "\n".join(json.dumps(r) for r in cot_rows) + "\n"
    )
    icl = root / "in-context-examples"
    (icl / "ICL_examples.json").write_text(json.dumps(pool, indent=1))
    (icl / "mmau-id2task.json").write_text(
        json.dumps(
            {"uuid-1": {"task": "speech", "category": "Reasoning", "sub-category": "Speaker Counting"}}
        )
    )
    return root
