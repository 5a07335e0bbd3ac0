"""ADU-Bench's correctness verdict: 10 or 0, anything else is a judge failure; found by its registered name."""

from __future__ import annotations

from audioeval.benchmarks.adu_bench.verdicts import score_10_or_0
from audioeval.config.verdicts import VERDICTS, OutOfRange


def test_score_10_or_0_accepts_only_the_two_ends():
    assert score_10_or_0("10") == 10.0 and score_10_or_0("Score: 0") == 0.0 and score_10_or_0("none") is None
    for other in ("5", "10.5", "-10", "100"):
        assert isinstance(score_10_or_0(other), OutOfRange)


def test_the_wing_reader_is_found_by_name_without_the_core_naming_it():
    assert VERDICTS.resolve("score_10_or_0", None, "test") is score_10_or_0
    assert {"yes_no", "score_0_10", "result_text", "score_10_or_0"} <= set(VERDICTS.names())
