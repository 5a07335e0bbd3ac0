"""LLM judges scoring responses for the tasks that declare a `judge:` block. Filled in by judges/panel.py."""

from __future__ import annotations

from typing import Any


def build_judge_panel(
    names: list[str], args: list[dict[str, Any]], roles_by_task: dict[str, list[Any]]
) -> Any:
    if not names:
        return None
    from audioeval.judges.panel import JudgePanel

    return JudgePanel.create(names, args, roles_by_task)
