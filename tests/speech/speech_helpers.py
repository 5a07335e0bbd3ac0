"""What the spoken-answer tests share: the toy task's command line, runs against a fake endpoint."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"
SRC = Path(__file__).resolve().parents[2] / "src"


def toy_run_args(
    out: Path, cache: Path, model: str, model_args: str, *extra: str, task: str = "toy_tones"
) -> list[str]:
    return [
        "--tasks", task, "--include_path", str(TOY), "--output_path", str(out), "--log_samples",
        "--no_progress", "--cache_dir", str(cache), "--model", model, "--model_args", model_args, *extra,
    ]  # fmt: skip


def subprocess_env() -> dict[str, str]:
    """The sources under test first, as for the test process itself."""
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def audioeval_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "audioeval", *args]
