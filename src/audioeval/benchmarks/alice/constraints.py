"""Output-format constraints: the ids Speech-IFEval uses, their keyword arguments, and how a plain answer is
written under each constraint (how ALICE fills demonstration answers)."""

from __future__ import annotations

import json
from typing import Any

CAPITAL = "change_case:english_capital"
LOWERCASE = "change_case:english_lowercase"
JSON_FORMAT = "detectable_format:json_format"
QUOTATION = "startend:quotation"
TITLE = "detectable_format:title"
REPEAT_PROMPT = "combination:repeat_prompt"
END_CHECKER = "startend:end_checker"
CHAIN_OF_THOUGHT = "chain-of-thought"

# The seven closed-ended (CEQ) constraints ALICE evaluates, in Speech-IFEval's order.
CEQ_IDS = (CAPITAL, LOWERCASE, JSON_FORMAT, QUOTATION, TITLE, REPEAT_PROMPT, END_CHECKER)

# Speech-IFEval's creative-writing constraints (not part of ALICE; checked for completeness).
BULLET_LISTS = "detectable_format:number_bullet_lists"
KEYWORDS_EXIST = "keywords:existence"
FORBIDDEN_WORDS = "keywords:forbidden_words"
NUMBER_WORDS = "length_constraints:number_words"
NUMBER_SENTENCES = "length_constraints:number_sentences"
NUMBER_PARAGRAPHS = "length_constraints:number_paragraphs"
CW_IDS = (BULLET_LISTS, KEYWORDS_EXIST, FORBIDDEN_WORDS, NUMBER_WORDS, NUMBER_SENTENCES, NUMBER_PARAGRAPHS)

# The constraint groups of ALICE's analysis (upstream collect.py's GROUP_MAP) and Speech-IFEval's CW groups.
GROUPS = {
    CAPITAL: "change_case",
    LOWERCASE: "change_case",
    JSON_FORMAT: "json_format",
    QUOTATION: "wrapping",
    TITLE: "wrapping",
    REPEAT_PROMPT: "startend",
    END_CHECKER: "startend",
    BULLET_LISTS: "bullet_lists",
    KEYWORDS_EXIST: "keywords",
    FORBIDDEN_WORDS: "keywords",
    NUMBER_WORDS: "length_constraints",
    NUMBER_SENTENCES: "length_constraints",
    NUMBER_PARAGRAPHS: "length_constraints",
}
CEQ_GROUPS = ("change_case", "json_format", "wrapping", "startend")

RELATIONS = ("less than", "at least")

# id -> {kwarg name: (python type, required)}
KWARGS_SPEC: dict[str, dict[str, tuple[type | tuple[type, ...], bool]]] = {
    CAPITAL: {},
    LOWERCASE: {},
    JSON_FORMAT: {},
    QUOTATION: {},
    TITLE: {},
    REPEAT_PROMPT: {"prompt_to_repeat": (str, True)},
    END_CHECKER: {"end_phrase": (str, True)},
    BULLET_LISTS: {"num_bullets": (int, True)},
    KEYWORDS_EXIST: {"keywords": (list, True)},
    FORBIDDEN_WORDS: {"forbidden_words": (list, True)},
    NUMBER_WORDS: {"num_words": (int, True), "relation": (str, True)},
    NUMBER_SENTENCES: {"num_sentences": (int, True), "relation": (str, True)},
    NUMBER_PARAGRAPHS: {"num_paragraphs": (int, True)},
}

# The key a demonstration's JSON answer uses, per task (upstream fill_in_answers.py).
JSON_KEYS = {"asr": "Content", "ser": "Emotion", "gr": "Gender", "mmau": "Content"}


# Task codes, and the other names the same tasks go by (Speech-IFEval's `dataset` field, upper case).
TASK_ALIASES = {
    "asr": "asr",
    "automatic_speech_recognition": "asr",
    "ser": "ser",
    "speech_emotion_recognition": "ser",
    "gr": "gr",
    "gender_recognition": "gr",
    "mmau": "mmau",
}


def task_code(task: Any) -> str | None:
    """asr / ser / gr / mmau for a task code or Speech-IFEval dataset name in any case; None if unknown."""
    return TASK_ALIASES.get(str(task).strip().lower()) if task is not None else None


def known_ids() -> list[str]:
    return sorted(KWARGS_SPEC)


def kwargs_problem(instruction_id: str, kwargs: Any) -> str | None:
    """Why `kwargs` does not fit `instruction_id` (None when it does). Keys whose value is null are ignored,
    as IFEval-style data often lists every possible key."""
    if instruction_id not in KWARGS_SPEC:
        return f"unknown instruction id {instruction_id!r}; known ids: {', '.join(known_ids())}"
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        return f"kwargs for {instruction_id} must be a JSON object, got {type(kwargs).__name__}"
    spec = KWARGS_SPEC[instruction_id]
    given = {k: v for k, v in kwargs.items() if v is not None}
    extra = sorted(set(given) - set(spec))
    if extra:
        allowed = ", ".join(spec) or "none"
        return f"{instruction_id} takes no argument {extra[0]!r} (its arguments: {allowed})"
    for name, (kind, required) in spec.items():
        if name not in given:
            if required:
                return f"{instruction_id} needs the argument {name!r}"
            continue
        value = given[name]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            return f"{instruction_id}: {name} must be an integer, got {value!r}"
        if kind is not int and not isinstance(value, kind):
            return f"{instruction_id}: {name} must be a {getattr(kind, '__name__', kind)}, got {value!r}"
        if kind is str and not value.strip():
            return f"{instruction_id}: {name} must not be empty"
        if name == "relation" and value not in RELATIONS:
            return f"{instruction_id}: relation must be one of {list(RELATIONS)}, got {value!r}"
    return None


def clean_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (kwargs or {}).items() if v is not None}


def phrase_of(instruction_id: str, kwargs: dict[str, Any]) -> str | None:
    """The phrase a repeat-prompt or end-checker constraint names."""
    if instruction_id == REPEAT_PROMPT:
        return kwargs.get("prompt_to_repeat")
    if instruction_id == END_CHECKER:
        return kwargs.get("end_phrase")
    return None


def joiner_after(phrase: str) -> str:
    """Upstream's alignment rule: a space after the phrase unless it already ends with whitespace."""
    return "" if phrase[-1:] in (" ", "\t", "\n") else " "


def format_answer(plain: str, instruction_id: str, kwargs: dict[str, Any], task: str) -> str:
    """A plain answer written the way ALICE's demonstrations write it under a constraint."""
    if instruction_id == CAPITAL:
        return plain.upper()
    if instruction_id == LOWERCASE:
        return plain.lower()
    if instruction_id == JSON_FORMAT:
        return json.dumps({JSON_KEYS[task]: plain.lower()}, ensure_ascii=False)
    if instruction_id == QUOTATION:
        return f'"{plain}"'
    if instruction_id == TITLE:
        return f"<<{plain}>>"
    if instruction_id == REPEAT_PROMPT:
        phrase = kwargs["prompt_to_repeat"]
        return phrase + joiner_after(phrase) + plain
    if instruction_id == END_CHECKER:
        phrase = kwargs["end_phrase"]
        if task == "mmau":
            body = plain.rstrip()
            return (body if body.endswith(".") else body + ".") + " " + phrase
        return plain + "\n" + phrase
    raise ValueError(f"format_answer: no rule for {instruction_id!r}")
