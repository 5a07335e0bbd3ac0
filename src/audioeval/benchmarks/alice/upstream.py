"""CEQ answer scoring exactly as ALICE's `eval_scripts/evaluation_main.py` does it, known bugs included.

`--task_args scoring=upstream` uses these functions instead of audioeval.benchmarks.alice.extract, so that a run can be
compared with published numbers. They reproduce upstream's behaviour (written here from its description in
docs/alice.md), including what audioeval's default scoring fixes:

- JSON answers: upstream passed the dataset name where the task code belonged, so its per-task key lists never
  apply: the answer is the first non-empty *string* value of a JSON object (numbers and lists are skipped; a
  reply that is not an object falls through to the prefix strip);
- title: every `<<...>>` span is deleted with its content, so a reply `<<angry>>` leaves nothing;
- gender: the "last gender word" rule applies only to Man/Woman labels; Male/Female labels need an exact
  match ("The speaker is male." is wrong for the label Male);
- repeat prompt and end phrase are removed without first stripping surrounding quotes;
- both answer-prefix patterns (`[ANS]`, then `ANS:` / `Answer -`) are removed in turn, except after a
  successful JSON parse.

Format compliance (the IFEval checkers) is the same in both modes; so is chain-of-thought scoring (judged).
"""

from __future__ import annotations

import json
import re
from typing import Any

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.checkers import as_text
from audioeval.benchmarks.alice.extract import strip_outer_quotes

SCORING_MODES = ("fixed", "upstream")

_FENCE_OPEN = re.compile(r"^\s*```(?:json)?\s*", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"\s*```\s*$")
_BRACKET_PREFIX = re.compile(r"^\s*\[(?:ANS|ANSWER)\]\s*", re.IGNORECASE)
_COLON_PREFIX = re.compile(r"^\s*(?:ANS|ANSWER)\s*[:\-]\s*", re.IGNORECASE)
_PUNCTUATION = re.compile(r"[^\w\s]+")
_SPACES = re.compile(r"\s+")
_EMOTIONS = {"neutral", "happy", "sad", "angry"}
_MAN_WOMAN = {"man", "woman"}


def scoring_mode(sample_info: dict[str, Any] | None, default: str = "fixed") -> str:
    """The `scoring` task parameter carried in a sample's info (the default when absent)."""
    mode = ((sample_info or {}).get("params") or {}).get("scoring") or default
    if mode not in SCORING_MODES:
        raise ValueError(f"scoring={mode!r}: use one of {', '.join(SCORING_MODES)}.")
    return mode


def _strip_fences(text: str) -> str:
    return _FENCE_CLOSE.sub("", _FENCE_OPEN.sub("", text.strip())).strip()


def _strip_prefixes(text: str) -> str:
    return _COLON_PREFIX.sub("", _BRACKET_PREFIX.sub("", text.strip())).strip()


def _first_string_value(text: str) -> str | None:
    body = strip_outer_quotes(_strip_fences(text))
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        start, end = body.find("{"), body.rfind("}")  # the greedy `{.*}` block
        if not 0 <= start < end:
            return None
        try:
            data = json.loads(body[start : end + 1])
        except (ValueError, RecursionError):
            return None
    if not isinstance(data, dict):
        return None
    for value in data.values():
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _delete_titles(text: str) -> str:
    """`re.sub(r"<<[^\\n]+>>", "", text)` in linear time (per line: from the first `<<` to the last `>>`, with
    at least one character between), then empty lines dropped."""
    lines = []
    for line in text.split("\n"):
        start, end = line.find("<<"), line.rfind(">>")
        if start >= 0 and end >= start + 3:
            line = line[:start] + line[end + 2 :]
        lines.append(line)
    return "\n".join(ln for ln in "\n".join(lines).splitlines() if ln.strip()).strip()


def _drop_leading_phrase(text: str, phrase: str) -> str:
    stripped = re.sub(
        r"^\s*" + re.escape(phrase) + r"\s*", "", text, count=1, flags=re.IGNORECASE | re.DOTALL
    )
    if stripped != text:
        return stripped.strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].strip().lower() == phrase.lower():
        return "\n".join(lines[1:]).strip()
    return text


def extract_answer_upstream(response: Any, instruction_id: str, kwargs: dict[str, Any] | None) -> str:
    """upstream's `extract_answer_for_scoring` for one CEQ constraint."""
    if isinstance(kwargs, list):
        kwargs = kwargs[0] if kwargs else {}
    kwargs = kwargs or {}
    text = _strip_fences(as_text(response))
    if instruction_id == C.JSON_FORMAT:
        found = _first_string_value(text)
        if found is not None:
            return found
    elif instruction_id == C.QUOTATION:
        text = strip_outer_quotes(text)
    elif instruction_id == C.TITLE:
        text = _delete_titles(text)
    elif instruction_id == C.REPEAT_PROMPT:
        phrase = kwargs.get("prompt_to_repeat")
        if isinstance(phrase, str) and phrase.strip():
            text = _drop_leading_phrase(text, phrase.strip())
    elif instruction_id == C.END_CHECKER:
        phrase = kwargs.get("end_phrase")
        if isinstance(phrase, str) and phrase.strip():
            body = text.rstrip()
            if body.lower().endswith(phrase.strip().lower()):
                text = body[: len(body) - len(phrase.strip())].rstrip()
    return _strip_prefixes(text)


def _normalize(text: str) -> str:
    text = _strip_prefixes(strip_outer_quotes(_strip_fences(text)))
    return _SPACES.sub(" ", _PUNCTUATION.sub("", text)).strip().lower()


def answer_matches_upstream(answer: Any, label: Any) -> bool:
    """upstream's accuracy rule: for SER labels and Man/Woman labels the last such word of the answer (else
    the whole answer) must equal the label; every other label (Male/Female, MMAU) needs an exact match."""
    gold, pred = _normalize(str(label)), _normalize(as_text(answer))
    allowed = _EMOTIONS if gold in _EMOTIONS else (_MAN_WOMAN if gold in _MAN_WOMAN else set())
    if allowed:
        hits = [token for token in pred.split() if token in allowed]
        return (hits[-1] if hits else pred) == gold
    return pred == gold
