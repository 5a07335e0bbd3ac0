"""Rule-based format compliance: Speech-IFEval's modified IFEval checkers, strict and loose.

Where Speech-IFEval's check is the same as Google IFEval's, the class from lm-eval's IFEval port
(`lm_eval.tasks.ifeval.instructions`) does the checking. The differences are implemented here:

- capital / lowercase: `str.isupper()` / `str.islower()` only (Speech-IFEval dropped the langdetect test);
- repeat_prompt: the response is lower-cased and stripped of surrounding `"`/`'` before the prefix test;
- bullet lists: a literal backslash-n counts as a line break, and lines starting with `•` or a digit count
  as bullets too; paragraphs: the stripped response is split on `***` *or* on line breaks.

Sentences are counted with NLTK's English Punkt model shipped as a package (audioeval.benchmarks.alice.sentences), so
the sentence-count check runs offline.

Three checks are re-implemented with the same results as the regular expressions they stand for, in
linear time: the title check and the bullet/paragraph checks use patterns such as `^\\s*-.*$` whose
backtracking takes minutes on a megabyte of blank lines. JSON parsing that exhausts the recursion limit
(deeply nested brackets) counts as not valid JSON.

strict: the response is non-empty after stripping and passes. loose (ALICE's variant of IFEval's loose
score): any of eight variants passes — the response, without its first line, without its last line, without
both, and each of those four with every `*` removed.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.sentences import count_sentences


@cache
def _ifeval() -> Any:
    """lm-eval's IFEval instruction module. Importing it tries to download NLTK's punkt data; offline that
    attempt is skipped here (the sentence count, the only check that needs punkt, is done here)."""
    import nltk

    original = nltk.download
    nltk.download = lambda *args, **kwargs: False
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from lm_eval.tasks.ifeval import instructions
    finally:
        nltk.download = original
    return instructions


# ---------------------------------------------------------------------------------------------------------
# Checks that differ from IFEval
def _capital(value: str, kwargs: dict[str, Any]) -> bool:
    return value.isupper()


def _lowercase(value: str, kwargs: dict[str, Any]) -> bool:
    return value.islower()


def _repeat_prompt(value: str, kwargs: dict[str, Any]) -> bool:
    prefix = str(kwargs["prompt_to_repeat"]).strip().lower()
    return value.strip().lower().strip("\"'").startswith(prefix)


def title_spans(value: str) -> list[str]:
    """What `re.findall(r"<<[^\\n]+>>", value)` returns, found in linear time: per line, the text from the
    first `<<` to the last `>>` when at least one character lies between them."""
    spans = []
    for line in value.split("\n"):
        start = line.find("<<")
        if start < 0:
            continue
        end = line.rfind(">>")
        if end >= start + 3:
            spans.append(line[start : end + 2])
    return spans


def _title(value: str, kwargs: dict[str, Any]) -> bool:
    return any(span.lstrip("<").rstrip(">").strip() for span in title_spans(value))


def _count_marker_lines(text: str, marker: str) -> int:
    """Number of matches of `^\\s*<marker>.*$` (re.MULTILINE, findall) in linear time, for the markers of
    Speech-IFEval's bullet checker: "*" (a `*` followed by a character other than `*`), "-", "•", "digit"."""
    n = len(text)
    count = 0
    pos = 0  # a line start
    while True:
        j = pos
        while j < n and text[j].isspace():
            j += 1
        if j >= n:
            return count
        ch = text[j]
        if marker == "*":
            hit = ch == "*" and j + 1 < n and text[j + 1] != "*"
        elif marker == "digit":
            hit = ch.isdecimal()
        else:
            hit = ch == marker
        if hit:
            count += 1
            end = text.find("\n", j + (2 if marker == "*" else 1))
            if end < 0:
                return count
            pos = end if text[end - 1] == "\n" else end + 1
        else:
            end = text.find("\n", j)
            if end < 0:
                return count
            pos = end + 1


def _bullet_lists(value: str, kwargs: dict[str, Any]) -> bool:
    value = value.replace("\\n", "\n")
    found = sum(_count_marker_lines(value, m) for m in ("*", "-", "•", "digit"))
    return found == kwargs["num_bullets"]


def split_paragraphs(text: str) -> list[str]:
    """What `re.split(r"\\s*\\*\\*\\*\\s*|\\n{1,}", text)` returns, computed in linear time."""
    n = len(text)
    ws_end = list(range(n + 1))  # ws_end[i]: end of the whitespace run starting at i
    for i in range(n - 1, -1, -1):
        if text[i].isspace():
            ws_end[i] = ws_end[i + 1]
    pieces, last, i = [], 0, 0
    while i < n:
        w = ws_end[i]
        if text.startswith("***", w):
            end = ws_end[w + 3]
            pieces.append(text[last:i])
            last = i = end
            continue
        if text[i] == "\n":
            k = i
            while k < n and text[k] == "\n":
                k += 1
            pieces.append(text[last:i])
            last = i = k
            continue
        i += 1
    pieces.append(text[last:])
    return pieces


def _sentences(value: str, kwargs: dict[str, Any]) -> bool:
    count = count_sentences(value)
    return (
        count < kwargs["num_sentences"]
        if kwargs["relation"] == "less than"
        else count >= kwargs["num_sentences"]
    )


def _paragraphs(value: str, kwargs: dict[str, Any]) -> bool:
    paragraphs = split_paragraphs(value.strip())
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index == 0 or index == len(paragraphs) - 1:
                count -= 1
            else:
                return False
    return count == kwargs["num_paragraphs"]


# ---------------------------------------------------------------------------------------------------------
# Checks identical to IFEval's: lm-eval's classes
_LM_EVAL_CLASSES = {
    C.JSON_FORMAT: "JsonFormat",
    C.QUOTATION: "QuotationChecker",
    C.END_CHECKER: "EndChecker",
    C.KEYWORDS_EXIST: "KeywordChecker",
    C.FORBIDDEN_WORDS: "ForbiddenWords",
    C.NUMBER_WORDS: "NumberOfWords",
}

_OWN_CHECKS = {
    C.CAPITAL: _capital,
    C.LOWERCASE: _lowercase,
    C.REPEAT_PROMPT: _repeat_prompt,
    C.TITLE: _title,
    C.BULLET_LISTS: _bullet_lists,
    C.NUMBER_PARAGRAPHS: _paragraphs,
    C.NUMBER_SENTENCES: _sentences,
}


def _lm_eval_check(instruction_id: str, value: str, kwargs: dict[str, Any]) -> bool:
    cls = getattr(_ifeval(), _LM_EVAL_CLASSES[instruction_id])
    checker = cls(instruction_id)
    checker.build_description(**kwargs)
    try:
        return bool(checker.check_following(value))
    except RecursionError:  # json.loads on thousands of nested brackets
        return False
    except re.error:  # a keyword that is not a valid regular expression: match it literally
        escaped = {k: [re.escape(w) for w in v] if isinstance(v, list) else v for k, v in kwargs.items()}
        checker.build_description(**escaped)
        return bool(checker.check_following(value))


def follows(instruction_id: str, value: str, kwargs: dict[str, Any]) -> bool:
    """Whether `value` satisfies one constraint (IFEval's `check_following`)."""
    if instruction_id in _OWN_CHECKS:
        return _OWN_CHECKS[instruction_id](value, kwargs)
    if instruction_id in _LM_EVAL_CLASSES:
        return _lm_eval_check(instruction_id, value, kwargs)
    raise ValueError(
        f"no format checker for instruction id {instruction_id!r}; known: {', '.join(C.known_ids())}"
    )


def loose_variants(response: str) -> list[str]:
    lines = response.split("\n")
    without_first = "\n".join(lines[1:]).strip()
    without_last = "\n".join(lines[:-1]).strip()
    without_both = "\n".join(lines[1:-1]).strip()
    variants = [response, without_first, without_last, without_both]
    return variants + [v.replace("*", "") for v in variants]


@dataclass(frozen=True)
class Compliance:
    strict: bool
    loose: bool
    per_instruction_strict: tuple[bool, ...]
    per_instruction_loose: tuple[bool, ...]


def as_text(response: Any) -> str:
    """Responses are text; anything else (None, bytes) is turned into text rather than failing."""
    if response is None:
        return ""
    if isinstance(response, bytes):
        return response.decode("utf-8", errors="replace")
    return str(response)


def check_response(
    response: Any, instruction_ids: list[str] | str, kwargs_list: list[dict[str, Any] | None] | dict | None
) -> Compliance:
    """Strict and loose compliance of one response with all of its constraints (IFEval's "follow all")."""
    text = as_text(response)
    ids = [instruction_ids] if isinstance(instruction_ids, str) else list(instruction_ids)
    if kwargs_list is None or isinstance(kwargs_list, dict):
        kwargs_list = [kwargs_list] * len(ids)
    if len(kwargs_list) != len(ids):
        raise ValueError(f"{len(ids)} instruction ids but {len(kwargs_list)} kwargs dicts")
    strict: list[bool] = []
    loose: list[bool] = []
    for instruction_id, kwargs in zip(ids, kwargs_list, strict=True):
        problem = C.kwargs_problem(instruction_id, kwargs)
        if problem:
            raise ValueError(problem)
        args = C.clean_kwargs(kwargs)
        strict.append(bool(text.strip()) and follows(instruction_id, text, args))
        loose.append(any(v.strip() and follows(instruction_id, v, args) for v in loose_variants(text)))
    return Compliance(
        strict=all(strict),
        loose=all(loose),
        per_instruction_strict=tuple(strict),
        per_instruction_loose=tuple(loose),
    )
