"""The text-speech consistency WER: what counts as the same words."""

from __future__ import annotations

import pytest

from audioeval.results.spoken_metrics import normalise_words, number_words, spoken_scores, word_error_rate


@pytest.mark.parametrize(
    "n, words",
    [(0, "zero"), (2, "two"), (13, "thirteen"), (21, "twenty one"), (100, "one hundred"),
     (1905, "one thousand nine hundred five"), (2_000_017, "two million seventeen")],
)  # fmt: skip
def test_numbers_are_spelled_as_words(n, words):
    assert " ".join(number_words(n)) == words


def test_case_punctuation_and_digits_do_not_count():
    assert normalise_words("It's 2 o'clock, Bob!") == ["its", "two", "oclock", "bob"]
    assert normalise_words("1,000 and 3.5") == ["one", "thousand", "and", "three", "point", "five"]
    assert word_error_rate("The answer is 2.", "the answer is two") == 0.0
    assert word_error_rate("twenty-one", "21") == 0.0


def test_word_errors_are_counted_against_the_transcript():
    assert word_error_rate("the cat sat", "the cat") == pytest.approx(1 / 3)
    assert word_error_rate("the cat sat", "a cat sat down") == pytest.approx(2 / 3)
    assert word_error_rate("low", "") == 1.0


def test_an_empty_transcript_leaves_the_wer_unmeasured_not_zero():
    assert word_error_rate("", "something") is None
    assert word_error_rate("...", "") is None
    assert spoken_scores(None, "heard", 1.5, None, 0.2)["spoken_text_wer"] is None
    assert spoken_scores("said", None, 1.5, None, 0.2) == {
        "spoken_text_wer": None,
        "spoken_seconds": 1.5,
        "spoken_time_to_first_audio_s": None,
        "spoken_real_time_factor": 0.2,
    }
