"""ALICE's answer parser: undo the item's own output format (see audioeval.benchmarks.alice.extract)."""

from __future__ import annotations

from typing import Any

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.checkers import as_text
from audioeval.benchmarks.alice.extract import extract_answer
from audioeval.benchmarks.alice.upstream import extract_answer_upstream, scoring_mode
from audioeval.config.parsers import register


@register("alice_answer")
def alice_answer(response: Any, sample_info: dict[str, Any] | None = None) -> str | None:
    """The answer in a response: for closed-ended items the constraint's format undone (JSON value, quotes,
    title brackets, repeated phrase, end phrase); for chain-of-thought items the whole response (the judge
    reads it). None (a parse failure) when nothing is left. With the task parameter `scoring=upstream`, the
    format is undone exactly as upstream's evaluation script does (audioeval.benchmarks.alice.upstream)."""
    text = as_text(response)
    if not text.strip():
        return None
    meta = (sample_info or {}).get("metadata") or {}
    instruction_id = meta.get("instruction_id")
    if meta.get("category") != "ceq" or instruction_id not in C.CEQ_IDS:
        return text.strip()
    if scoring_mode(sample_info) == "upstream":
        return extract_answer_upstream(text, instruction_id, meta.get("kwargs")) or None
    return extract_answer(text, instruction_id, meta.get("kwargs"), str(meta.get("task"))) or None
