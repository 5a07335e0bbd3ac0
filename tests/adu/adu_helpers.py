"""Helpers shared by the ADU-Bench tests (imported by name; conftest.py holds the fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audioeval.testing.fake_openai import prompt_text

JUDGE_MARK = "meticulous evaluator"


def is_judge(body: dict[str, Any]) -> bool:
    return JUDGE_MARK in prompt_text(body)


def response_first(body: dict[str, Any]) -> bool:
    text = prompt_text(body)
    return text.index("[Assistant's response]") < text.index("[Reference answer]")


def judge_reply(ref_first: str = "7", resp_first: str = "9", model: str = "A fine answer."):
    """Judges give `ref_first` / `resp_first` depending on the order; the model answers `model`."""

    def reply(body: dict[str, Any]) -> str:
        if is_judge(body):
            return resp_first if response_first(body) else ref_first
        return model

    return reply


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows)
    )
    return path
