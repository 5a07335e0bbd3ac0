"""Per-sample metrics of a spoken answer, reported beside each task's own (aggregated like them, as means):

- `spoken_text_wer`: word error rate of the ASR of the audio against the model's own transcript (text-speech
  consistency; for `--model tts` the ASR's own loss). Both texts are normalised first: lower case, no
  punctuation, digits spelled as words, so "2" and "two" or "Hello," and "hello" do not count as errors;
- `spoken_seconds`: the answer's duration;
- `spoken_time_to_first_audio_s`, `spoken_real_time_factor`: measured timings (generation time over duration),
  kept with the cached response, so a resumed run reports what was measured when the answer was made.
"""

from __future__ import annotations

import re
import unicodedata

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred"))
_TOKEN = re.compile(r"\d+(?:\.\d+)?|[^\W\d_]+")


def number_words(n: int) -> list[str]:
    """English words for a non-negative integer: 21 -> twenty one, 1905 -> one thousand nine hundred five."""
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        return [_TENS[n // 10]] + (number_words(n % 10) if n % 10 else [])
    for size, name in _SCALES:
        if n >= size:
            rest = number_words(n % size) if n % size else []
            return [*number_words(n // size), name, *rest]
    raise AssertionError("unreachable")


def _spell(token: str) -> list[str]:
    if not token[0].isdigit():
        return [token]
    whole, _, fraction = token.partition(".")
    if len(whole) > 15:  # a digit string, not a quantity: spelled digit by digit
        return [_ONES[int(d)] for d in whole]
    words = number_words(int(whole))
    return [*words, "point", *(_ONES[int(d)] for d in fraction)] if fraction else words


def normalise_words(text: str) -> list[str]:
    """The words of a text as the WER compares them."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,000 -> 1000
    text = re.sub(r"['\u2019]", "", text)  # don't -> dont, as ASR systems spell it either way
    return [w for token in _TOKEN.findall(text) for w in _spell(token)]


def edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def word_error_rate(reference: str, hypothesis: str) -> float | None:
    """Edits over reference words, after normalisation; None when the reference has no words (undefined)."""
    ref, hyp = normalise_words(reference), normalise_words(hypothesis)
    if not ref:
        return None
    return edit_distance(ref, hyp) / len(ref)


def spoken_scores(
    transcript: str | None,
    asr_text: str | None,
    seconds: float,
    time_to_first_audio_s: float | None,
    real_time_factor: float | None,
) -> dict[str, float | None]:
    wer = word_error_rate(transcript, asr_text) if transcript is not None and asr_text is not None else None
    return {
        "spoken_text_wer": wer,
        "spoken_seconds": seconds,
        "spoken_time_to_first_audio_s": time_to_first_audio_s,
        "spoken_real_time_factor": real_time_factor,
    }
