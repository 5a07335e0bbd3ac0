"""Getting the answer out of a formatted CEQ response, and deciding whether it matches the label.

`extract_answer` undoes the item's own constraint in the order of ALICE's rule-based processor: code fence,
JSON value, outer quotes, title brackets, repeated prefix phrase, end phrase, then an `[ANS]`-style prefix.
It differs from upstream where upstream was wrong (see docs/alice.md):

- a JSON answer is looked up by the *task code* (asr/ser/gr/mmau) in a per-task key list, case-insensitively
  (upstream passed the dataset name, so only the "first string value" fallback ever ran);
- a title keeps the answer: `<<angry>>` gives `angry` (upstream deleted every `<<...>>` span with its
  content). When text remains outside the brackets the brackets are taken to be a heading and dropped, as
  upstream did;
- gender answers map Man/Woman onto Male/Female on both sides, so "man" matches the label "Male".
"""

from __future__ import annotations

import json
import re
from typing import Any

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.checkers import as_text, title_spans

EMOTIONS = ("neutral", "happy", "sad", "angry")
GENDER_WORDS = {"male": "male", "female": "female", "man": "male", "woman": "female"}

# Keys tried in order when a JSON answer has several (matched case-insensitively).
JSON_ANSWER_KEYS = {
    "asr": ("transcript", "transcription", "text", "content", "answer", "speech"),
    "ser": ("emotion", "label", "answer", "prediction", "pred", "content"),
    "gr": ("gender", "sex", "label", "answer", "prediction", "pred", "content"),
    "mmau": ("answer", "content", "choice", "option", "label", "prediction", "pred"),
}

_FENCE_OPEN = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n?", re.IGNORECASE)
_ANS_PREFIX = re.compile(r"^\s*(?:\[(?:ans|answer)\]|(?:ans|answer)[ \t]*[:\-])[ \t]*", re.IGNORECASE)
_NON_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def strip_code_fence(text: str) -> str:
    """Remove one leading ```json / ``` fence and one trailing ```."""
    text = text.strip()
    opened = _FENCE_OPEN.match(text)
    if opened:
        text = text[opened.end() :]
    if text.endswith("```"):
        text = text[:-3]
    return text.strip()


def strip_outer_quotes(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1].strip()
    return text


def strip_answer_prefix(text: str) -> str:
    return _ANS_PREFIX.sub("", text, count=1).strip()


def _load_json(text: str) -> tuple[bool, Any]:
    for candidate in (text, _braced(text)):
        if candidate is None:
            continue
        try:
            return True, json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return False, None


def _braced(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None


def _scalar(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    return None


def json_answer(text: str, task: str) -> str | None:
    """The answer inside a JSON reply: the value of the first task key present, else the first non-empty
    scalar value; a bare JSON string or number is itself the answer. None if the text is not JSON."""
    task = C.task_code(task) or str(task)
    ok, data = _load_json(text)
    if not ok:
        return None
    if isinstance(data, dict):
        lowered = {str(k).strip().lower(): v for k, v in data.items()}
        for key in JSON_ANSWER_KEYS.get(task, ()):
            if key in lowered and _scalar(lowered[key]) is not None:
                return _scalar(lowered[key])
        for value in data.values():
            if _scalar(value) is not None:
                return _scalar(value)
        return ""
    if isinstance(data, list):
        for value in data:
            if _scalar(value) is not None:
                return _scalar(value)
        return ""
    return _scalar(data) or ""


def untitle(text: str) -> str:
    """Drop `<<...>>` brackets. If text remains outside them they were a heading: keep the rest (upstream's
    behaviour). If nothing remains, the answer itself was bracketed: keep what was inside."""
    spans = title_spans(text)
    if not spans:
        return text
    rest = text
    for span in spans:
        rest = rest.replace(span, "", 1)
    rest = "\n".join(line for line in rest.split("\n") if line.strip()).strip()
    if rest:
        return rest
    inner = [span.lstrip("<").rstrip(">").strip() for span in spans]
    return "\n".join(i for i in inner if i)


def _starts_with(text: str, phrase: str) -> bool:
    return text[: len(phrase)].lower() == phrase.lower()


def _ends_with(text: str, phrase: str) -> bool:
    return len(text) >= len(phrase) and text[len(text) - len(phrase) :].lower() == phrase.lower()


def remove_leading_phrase(text: str, phrase: str) -> str:
    phrase = phrase.strip()
    body = text.strip().strip("\"'").strip()
    if phrase and _starts_with(body, phrase):
        return body[len(phrase) :].strip()
    lines = text.strip().split("\n")
    if len(lines) > 1 and lines[0].strip().lower() == phrase.lower():
        return "\n".join(lines[1:]).strip()
    return text.strip()


def remove_trailing_phrase(text: str, phrase: str) -> str:
    phrase = phrase.strip()
    body = text.strip().strip('"').strip()
    if phrase and _ends_with(body, phrase):
        return body[: len(body) - len(phrase)].strip()
    return text.strip()


def extract_answer(response: Any, instruction_id: str, kwargs: dict[str, Any] | None, task: str) -> str:
    """The answer in a CEQ response, with the item's format undone. `task` is asr/ser/gr/mmau (Speech-IFEval
    dataset names are accepted too)."""
    if isinstance(kwargs, list):  # Speech-IFEval rows hold a list with one kwargs dict
        kwargs = kwargs[0] if kwargs else {}
    kwargs = C.clean_kwargs(kwargs)
    task = C.task_code(task) or str(task)
    text = strip_code_fence(as_text(response))
    if instruction_id == C.JSON_FORMAT:
        found = json_answer(text, task)
        if found is not None:
            text = found
    elif instruction_id == C.QUOTATION:
        text = strip_outer_quotes(text)
    elif instruction_id == C.TITLE:
        text = untitle(text)
    elif instruction_id == C.REPEAT_PROMPT and kwargs.get("prompt_to_repeat"):
        text = remove_leading_phrase(text, kwargs["prompt_to_repeat"])
    elif instruction_id == C.END_CHECKER and kwargs.get("end_phrase"):
        text = remove_trailing_phrase(text, kwargs["end_phrase"])
    return strip_answer_prefix(text)


def normalize_choice(text: Any) -> str:
    """ALICE's answer normalisation for SER/GR/MMAU: fences, outer quotes and an answer prefix removed,
    punctuation dropped, whitespace collapsed, lower case."""
    text = strip_answer_prefix(strip_outer_quotes(strip_code_fence(as_text(text))))
    text = _NON_WORD.sub("", text)
    return _SPACES.sub(" ", text).strip().lower()


def _last_in(tokens: list[str], vocabulary: dict[str, str] | tuple[str, ...]) -> str | None:
    for token in reversed(tokens):
        if token in vocabulary:
            return vocabulary[token] if isinstance(vocabulary, dict) else token
    return None


def answer_matches(prediction: Any, label: str, task: str) -> bool:
    """ALICE's rule-based accuracy. SER: the last emotion word in the answer must be the label. GR: the
    last gender word, with man/woman read as male/female on both sides. Otherwise (MMAU and any label
    outside those sets): the normalised answer must equal the normalised label."""
    task = C.task_code(task) or str(task)
    pred = normalize_choice(prediction)
    gold = normalize_choice(label)
    tokens = pred.split()
    if task == "ser" and gold in EMOTIONS:
        return (_last_in(tokens, EMOTIONS) or pred) == gold
    if task == "gr" and gold in GENDER_WORDS:
        return (_last_in(tokens, GENDER_WORDS) or pred) == GENDER_WORDS[gold]
    return pred == gold
