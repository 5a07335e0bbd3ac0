"""Choosing a test item's demonstrations and aligning them to it.

Sampling (upstream run.py): the item's demonstration list — same task and category, same constraint id for
CEQ, same MMAU sub-category — is shuffled by a generator seeded with 42 + seed + rank, where rank is the
item's position among the items of its task and constraint id. The first k of that one permutation are the
k-shot demonstrations, so demonstration sets are nested across k and appear in the shuffled order. With the
default seed 0 this is the permutation upstream's `random.seed(42 + i); random.shuffle(pool)` produces.

Alignment (upstream's default, on unless `align_demos=False`): for repeat-prompt and end-checker items, the
phrase quoted in each demonstration's constraint sentence becomes the test item's phrase, and the
demonstration answer is rewritten to start (end) with it.
"""

from __future__ import annotations

import random
import re

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.items import PoolEntry, TestItem

SHUFFLE_BASE = 42
_QUOTED = re.compile(r'"([^"]*)"')


def demo_order(pool_size: int, seed: int, rank: int) -> list[int]:
    order = list(range(pool_size))
    random.Random(SHUFFLE_BASE + seed + rank).shuffle(order)
    return order


def quoted_phrase(text: str) -> str | None:
    match = _QUOTED.search(text)
    return match.group(1) if match else None


def replace_quoted_phrase(text: str, phrase: str) -> str:
    """The text with whatever stands between its first two double quotes replaced by `phrase`."""
    match = _QUOTED.search(text)
    if not match:
        return text
    return text[: match.start(1)] + phrase + text[match.end(1) :]


def _starts_with(text: str, phrase: str) -> bool:
    return bool(phrase) and text[: len(phrase)].lower() == phrase.lower()


def _ends_with(text: str, phrase: str) -> bool:
    return bool(phrase) and len(text) >= len(phrase) and text[-len(phrase) :].lower() == phrase.lower()


def realign_repeat_answer(answer: str, old_phrase: str | None, phrase: str) -> str:
    """`phrase` + the answer that followed the old phrase (upstream: the text after the first ':')."""
    old = (old_phrase or "").strip()
    if _starts_with(answer.strip(), old):
        rest = answer.strip()[len(old) :].lstrip()
    elif ":" in answer:
        rest = answer.split(":", 1)[1].lstrip()
    else:
        rest = answer.strip()
    return phrase + C.joiner_after(phrase) + rest


def realign_end_answer(answer: str, old_phrase: str | None, phrase: str, task: str) -> str:
    """The answer without the old end phrase, then `phrase` (upstream: first line + newline + phrase; for
    MMAU the text before "This", with a full stop, + space + phrase)."""
    old = (old_phrase or "").strip()
    body = answer.rstrip().rstrip('"').rstrip()
    if _ends_with(body, old):
        body = body[: len(body) - len(old)].rstrip()
    elif task == "mmau":
        body = answer.split("This")[0].rstrip()
    else:
        body = answer.split("\n")[0]
    if task == "mmau":
        return (body if body.endswith(".") else body + ".") + " " + phrase
    return body + "\n" + phrase


def align(entry: PoolEntry, item: TestItem) -> tuple[str, str]:
    """(constraint text, answer) of a demonstration, aligned to the test item's phrase."""
    instruction_id = item.instruction_id
    phrase = C.phrase_of(instruction_id, item.kwargs)
    if phrase is None or entry.key[2] != instruction_id:
        return entry.constraint_text, entry.answer
    constraint = replace_quoted_phrase(entry.constraint_text, phrase)
    if entry.answer_plain is not None:
        answer = C.format_answer(entry.answer_plain, instruction_id, item.kwargs, item.task)
    elif instruction_id == C.REPEAT_PROMPT:
        answer = realign_repeat_answer(entry.answer, quoted_phrase(entry.constraint_text), phrase)
    else:
        answer = realign_end_answer(entry.answer, quoted_phrase(entry.constraint_text), phrase, item.task)
    return constraint, answer
