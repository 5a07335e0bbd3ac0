"""Word error counts for ALICE's ASR scores, with its two normalizers.

CEQ responses use ALICE's rule-based normalizer: upper case, every run of characters other than A-Z and the
apostrophe becomes a space. Chain-of-thought responses (the transcript the judge extracted) use Whisper's
`BasicTextNormalizer` after removing `<` and `>`, as ALICE's judge scripts do. Both feed corpus-level WER:
each utterance contributes its edit count and its reference length, and the task's score is their ratio.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from audioeval.alice.checkers import as_text

_NOT_AZ = re.compile(r"[^A-Z']+")


def alice_normalize(text: Any) -> str:
    return " ".join(_NOT_AZ.sub(" ", as_text(text).upper()).split())


@cache
def _basic_normalizer() -> Any:
    from audioeval.alice.whisper_basic import BasicTextNormalizer

    return BasicTextNormalizer()


def whisper_basic_normalize(text: Any) -> str:
    text = as_text(text).replace("<", "").replace(">", "")
    return " ".join(_basic_normalizer()(text).split())


NORMALIZERS = {"alice": alice_normalize, "whisper_basic": whisper_basic_normalize}


def word_errors(reference: Any, hypothesis: Any, normalizer: str) -> tuple[int, int]:
    """(substitutions + deletions + insertions, reference words) after normalising both sides."""
    import jiwer

    norm = NORMALIZERS[normalizer]
    ref, hyp = norm(reference), norm(hypothesis)
    ref_words = len(ref.split())
    if not ref_words:
        return len(hyp.split()), 0
    out = jiwer.process_words(ref, hyp)
    return int(out.substitutions + out.deletions + out.insertions), ref_words


def looks_degenerate(response: Any, repeats: int = 8, max_period: int = 40) -> bool:
    """Whether a response ends in a loop (the same word sequence, or the same few characters, repeated at
    least `repeats` times): the mark of hallucinated or non-terminating generation, whose transcript ALICE
    replaces with an empty string."""
    text = as_text(response).rstrip()
    words = text.split()
    for period in range(1, max_period + 1):
        span = period * repeats
        if len(words) < span:
            break
        tail = words[-span:]
        if all(tail[i] == tail[i + period] for i in range(span - period)):
            return True
    for period in range(1, 9):
        span = period * repeats * 4
        if len(text) < span:
            break
        tail = text[-span:]
        if tail.strip() and all(tail[i] == tail[i + period] for i in range(span - period)):
            return True
    return False
