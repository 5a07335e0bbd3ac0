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

from audioeval.benchmarks.alice.checkers import as_text

_NOT_AZ = re.compile(r"[^A-Z']+")


def alice_normalize(text: Any) -> str:
    return " ".join(_NOT_AZ.sub(" ", as_text(text).upper()).split())


@cache
def _basic_normalizer() -> Any:
    from audioeval.benchmarks.alice.whisper_basic import BasicTextNormalizer

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


# A loop must repeat its unit at least this often and run at least this long before a response counts as
# non-terminating: speech itself repeats ("ha ha ha", "no, no, no"), and a rule of dashes or a long number
# is a short run of one character.
LOOP_MIN_REPEATS = 8
LOOP_MIN_WORDS = 48  # words in the repeating tail (1-40 word units)
LOOP_MIN_CHARS = 256  # characters in the repeating tail (1-8 character units)


def _periodic_tail(seq: Any, max_period: int, min_length: int) -> bool:
    """Whether the end of `seq` repeats a unit of at most `max_period` elements, at least LOOP_MIN_REPEATS
    times and over at least `min_length` elements (a partial unit at the very end is allowed)."""
    for period in range(1, max_period + 1):
        span = max(period * LOOP_MIN_REPEATS, min_length)
        if len(seq) < span:
            continue
        tail = seq[-span:]
        if all(tail[i] == tail[i + period] for i in range(span - period)):
            return True
    return False


def looks_degenerate(response: Any) -> bool:
    """Whether a response ends in a loop (a word sequence, or a few characters, repeated over and over): the
    mark of hallucinated or non-terminating generation, whose transcript ALICE replaces with an empty string."""
    text = as_text(response).rstrip()
    words = text.split()
    # a loop cut off by the token limit may end inside a word
    if _periodic_tail(words, 40, LOOP_MIN_WORDS) or _periodic_tail(words[:-1], 40, LOOP_MIN_WORDS):
        return True
    return _periodic_tail(text, 8, LOOP_MIN_CHARS)
