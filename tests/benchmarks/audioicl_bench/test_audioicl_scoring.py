"""AudioICL-Bench parsers and the exact_match metric, case by case as the paper scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from audioeval.config.parsers import get_parser
from audioeval.results.scoring import load_metric

METRIC = Path(__file__).resolve().parents[3] / "metrics" / "exact_match"


@pytest.mark.parametrize(
    "response,expected",
    [
        ("7", "7"),
        ("The answer is 3, not 4.", "4"),  # the last integer, as upstream
        ("5 + 3 = 8", "8"),
        ("-2", "-2"),
        ("twelve", None),
        ("", None),
    ],
)
def test_last_integer(response, expected):
    assert get_parser("last_integer")(response) == expected


@pytest.mark.parametrize(
    "response,expected",
    [
        ("Normal", "Normal"),
        (" anomalous.", "Anomalous"),
        ("Anomaly", "Anomalous"),
        ("ABNORMAL!", "Anomalous"),
        ("true", "Anomalous"),
        ("1", "Anomalous"),
        ("False", "Normal"),
        ("0", "Normal"),
        ("The machine sounds anomalous to me", "Anomalous"),
        ("It is abnormally loud", "Anomalous"),
        ("Sounds normal.", "Normal"),
        ("not normal", "Normal"),  # upstream keyword rule: 'normal' without anomal/abnorm reads as Normal
        ("I cannot tell", None),
        ("", None),
    ],
)
def test_anomaly_keywords(response, expected):
    assert get_parser("audioicl_anomaly")(response) == expected


@pytest.mark.parametrize(
    "response,expected",
    [
        ("EGG", "EGG"),
        ("e g g", "EGG"),
        ("E-G-E.", "EGE"),
        ("Answer: EGE", None),  # letters only, exact length: 'ANSWEREGE' has 9
        ("EG", None),
        ("EGGE", None),
        ("123", None),
    ],
)
def test_remap_letters_exact_length(response, expected):
    assert get_parser("audioicl_remap")(response) == expected


def test_remap_length_argument():
    assert get_parser("audioicl_remap", {"length": 4})("ABBA") == "ABBA"


@pytest.mark.parametrize(
    "response,expected",
    [
        ("smile", "smile"),
        (" Smile. ", "smile"),
        ('"S M I L E"', "smile"),
        ("**smile**", "smile"),  # markdown emphasis is punctuation too
        ("`smile`", "smile"),
        ("s-m-i-l-e", "smile"),
        ("_Smile_ \u2014", "smile"),
        ("# smile", "smile"),
        ("...", None),
        ("**", None),
        ("", None),
    ],
)
def test_morse_normalisation(response, expected):
    assert get_parser("audioicl_morse")(response) == expected


def test_metric_integer_and_exact_modes_and_parse_failures():
    metric = load_metric(METRIC)
    out = metric.compute(predictions=["7", "+7", "8", ""], references=["7", "7", "7", "7"], mode="integer")
    assert out["accuracy"] == [1.0, 1.0, 0.0, 0.0]
    out = metric.compute(
        predictions=["smile", "EGG", "Anomalous", "Normal", ""],
        references=["smile", "EGG", "Anomalous", "Anomalous", ""],
        mode="exact",
        parse_failures=[False, False, False, False, True],
    )
    assert out["accuracy"] == [1.0, 1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="mode"):
        metric.compute(predictions=["1"], references=["1"], mode="fuzzy")


def test_task_scorer_counts_parse_failures():
    from audioeval.config.registry import TaskRegistry
    from audioeval.results.scoring import SampleToScore, TaskScorer

    task = TaskRegistry.discover().tasks["audioicl_audio_remap"]
    scored = TaskScorer(task).score(
        [
            SampleToScore("GEE", "GEE", {}),
            SampleToScore("Answer: GEE", "GEE", {}),
            SampleToScore("gee", "GEE", {}),
        ]
    )
    assert [s["scores"]["accuracy"] for s in scored] == [1.0, 0.0, 1.0]
    assert [s["parse_failure"] for s in scored] == [False, True, False]


def test_morse_answers_in_markdown_are_scored_right():
    from audioeval.config.registry import TaskRegistry
    from audioeval.results.scoring import SampleToScore, TaskScorer

    tasks = TaskRegistry.discover().tasks
    word = TaskScorer(tasks["audioicl_morse_code"]).score(
        [SampleToScore(r, "smile", {}) for r in ("**smile**", "Smile!", "*s m i l e*", "smiles")]
    )
    assert [s["scores"]["accuracy"] for s in word] == [1.0, 1.0, 1.0, 0.0]
    (letter,) = TaskScorer(tasks["audioicl_morse_letter"]).score([SampleToScore("**Q**", "Q", {})])
    assert letter["scores"]["accuracy"] == 1.0
