"""Format-compliance checkers: Speech-IFEval's modified IFEval rules, strict and loose, and the
format_compliance metric module."""

from __future__ import annotations

import random
import re

import pytest

from audioeval.alice import constraints as C
from audioeval.alice.checkers import (
    _count_marker_lines,
    _ifeval,
    check_response,
    split_paragraphs,
    title_spans,
)
from audioeval.resources import metrics_dir
from audioeval.scoring import load_metric
from tests.alice_testutil import isolated_cache  # noqa: F401


def strict(response, iid, kwargs=None):
    return check_response(response, iid, kwargs or {}).strict


def loose(response, iid, kwargs=None):
    return check_response(response, iid, kwargs or {}).loose


@pytest.mark.parametrize(
    "response, expected",
    [
        ("ANGRY", True),
        ("THE ANSWER IS: HAPPY.", True),
        ("HOLA AMIGO, ESTOY FELIZ", True),  # Speech-IFEval dropped IFEval's langdetect test
        ("Angry", False),
        ("123", False),  # no cased letter at all
        ("   ", False),
        ("", False),
    ],
)
def test_capital(response, expected):
    assert strict(response, C.CAPITAL) is expected


def test_capital_ignores_language_unlike_ifeval(monkeypatch):
    import langdetect

    monkeypatch.setattr(langdetect.DetectorFactory, "seed", 0)  # langdetect is random unless seeded
    lm_eval_checker = _ifeval().CapitalLettersEnglishChecker(C.CAPITAL)
    lm_eval_checker.build_description()
    spanish = "HOLA AMIGO, HOY ESTOY MUY FELIZ CON ESTE RESULTADO"
    assert lm_eval_checker.check_following(spanish) is False
    assert strict(spanish, C.CAPITAL) is True


@pytest.mark.parametrize(
    "response, expected", [("sad", True), ("the speaker sounds sad.", True), ("Sad", False), ("42", False)]
)
def test_lowercase(response, expected):
    assert strict(response, C.LOWERCASE) is expected


@pytest.mark.parametrize(
    "response, expected",
    [
        ('{"Emotion": "angry"}', True),
        ('```json\n{"Emotion": "angry"}\n```', True),
        ('```JSON\n{"a": 1}\n```', True),
        ('"angry"', True),  # any JSON value passes, as upstream
        ("3", True),
        ("{Emotion: angry}", False),
        ("angry", False),
        ('Here you go: {"a": 1}', False),
        ("[" * 50_000, False),  # deep nesting exhausts the recursion limit: not JSON, no crash
    ],
)
def test_json(response, expected):
    assert strict(response, C.JSON_FORMAT) is expected


@pytest.mark.parametrize(
    "response, expected",
    [('"angry"', True), ('  "the cat sat"\n', True), ('"', False), ("'angry'", False), ('"angry', False)],
)
def test_quotation(response, expected):
    assert strict(response, C.QUOTATION) is expected


@pytest.mark.parametrize(
    "response, expected",
    [
        ("<<angry>>", True),
        ("The speaker is <<happy>> today", True),
        ("<<Emotion>>\nangry", True),
        ("<< >>", False),
        ("<<>>", False),
        ("<<first\nsecond>>", False),
        ("angry", False),
    ],
)
def test_title(response, expected):
    assert strict(response, C.TITLE) is expected


def test_repeat_prompt_strips_quotes_unlike_ifeval():
    kwargs = {"prompt_to_repeat": "The answer is:"}
    assert strict("The answer is: sad", C.REPEAT_PROMPT, kwargs)
    assert strict("the ANSWER is:sad", C.REPEAT_PROMPT, kwargs)
    assert strict('"The answer is: sad"', C.REPEAT_PROMPT, kwargs)
    assert not strict("Sad. The answer is: sad", C.REPEAT_PROMPT, kwargs)
    ifeval = _ifeval().RepeatPromptThenAnswer(C.REPEAT_PROMPT)
    ifeval.build_description(**kwargs)
    assert ifeval.check_following('"The answer is: sad"') is False


def test_end_checker():
    kwargs = {"end_phrase": "Hope this helps."}
    assert strict("sad\nHope this helps.", C.END_CHECKER, kwargs)
    assert strict('"sad. hope this helps."', C.END_CHECKER, kwargs)
    assert not strict("Hope this helps. sad", C.END_CHECKER, kwargs)


def test_loose_accepts_a_first_line_or_markdown_stars():
    assert not strict("Sure, here it is:\nANGRY", C.CAPITAL)
    assert loose("Sure, here it is:\nANGRY", C.CAPITAL)
    assert not strict("**Answer**: angry\n\nthat is all", C.LOWERCASE)
    assert loose("**answer**: angry", C.LOWERCASE)
    assert loose('Here is the JSON:\n{"a": 1}\nDone!', C.JSON_FORMAT)
    assert not strict('Here is the JSON:\n{"a": 1}\nDone!', C.JSON_FORMAT)
    assert not loose("", C.CAPITAL)


def test_bullet_lists_count_dots_digits_and_literal_newlines():
    kwargs = {"num_bullets": 3}
    assert strict("* one\n* two\n* three", C.BULLET_LISTS, kwargs)
    assert strict("• one\n- two\n3. three", C.BULLET_LISTS, kwargs)
    assert strict("* one\\n* two\\n* three", C.BULLET_LISTS, kwargs)
    assert not strict("* one\n* two", C.BULLET_LISTS, kwargs)
    assert not strict("** bold\n* one\n* two", C.BULLET_LISTS, kwargs)


def test_paragraphs_split_on_newlines_and_dividers():
    kwargs = {"num_paragraphs": 2}
    assert strict("First part.\nSecond part.", C.NUMBER_PARAGRAPHS, kwargs)
    assert strict("First part.\n***\nSecond part.", C.NUMBER_PARAGRAPHS, kwargs)
    assert strict("\n\nFirst.\n\nSecond.\n", C.NUMBER_PARAGRAPHS, kwargs)
    assert not strict("One.\nTwo.\nThree.", C.NUMBER_PARAGRAPHS, kwargs)
    assert not strict("One. *** *** Two.", C.NUMBER_PARAGRAPHS, kwargs)  # an empty middle paragraph fails


def test_creative_writing_checks_from_ifeval():
    assert strict("A dog and a cat", C.KEYWORDS_EXIST, {"keywords": ["dog", "CAT"]})
    assert not strict("A dog only", C.KEYWORDS_EXIST, {"keywords": ["dog", "cat"]})
    assert strict("A dogma", C.FORBIDDEN_WORDS, {"forbidden_words": ["dog"]})
    assert not strict("A dog.", C.FORBIDDEN_WORDS, {"forbidden_words": ["dog"]})
    assert strict("one two three", C.NUMBER_WORDS, {"num_words": 3, "relation": "at least"})
    assert not strict("one two three", C.NUMBER_WORDS, {"num_words": 3, "relation": "less than"})
    assert strict("c++ is fine", C.KEYWORDS_EXIST, {"keywords": ["c++"]})  # not a valid regex: literal


def test_sentence_count_without_punkt_is_missing_with_a_clear_note():
    from audioeval.alice.checkers import _punkt_available

    if _punkt_available():
        pytest.skip("NLTK punkt is installed here")
    result = check_response("One. Two.", C.NUMBER_SENTENCES, {"num_sentences": 2, "relation": "at least"})
    assert result.strict is None and result.loose is None
    assert "nltk.downloader punkt" in result.note


@pytest.mark.parametrize(
    "iid, kwargs, fragment",
    [
        ("startend:nonsense", {}, "unknown instruction id"),
        (C.REPEAT_PROMPT, {}, "needs the argument 'prompt_to_repeat'"),
        (C.CAPITAL, {"end_phrase": "x"}, "takes no argument 'end_phrase'"),
        (C.END_CHECKER, {"end_phrase": ""}, "must not be empty"),
        (C.NUMBER_WORDS, {"num_words": 3, "relation": "about"}, "relation must be one of"),
    ],
)
def test_kwargs_that_do_not_fit_the_id_are_rejected(iid, kwargs, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        check_response("x", iid, kwargs)


def test_null_kwargs_are_ignored_as_in_ifeval_data():
    assert strict("ANGRY", C.CAPITAL, {"prompt_to_repeat": None, "end_phrase": None})


def test_linear_rewrites_match_the_regexes_they_replace():
    patterns = {"*": r"^\s*\*[^\*].*$", "-": r"^\s*-.*$", "•": r"^\s*•.*$", "digit": r"^\s*\d.*$"}
    rng = random.Random(7)
    alphabet = [" ", "\n", "*", "a", "-", "1", "•", "\t", "<", ">", "\r", "\u00a0", "٣"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        for marker, pattern in patterns.items():
            assert _count_marker_lines(text, marker) == len(re.findall(pattern, text, flags=re.MULTILINE))
        assert split_paragraphs(text) == re.split(r"\s*\*\*\*\s*|\n{1,}", text)
        assert title_spans(text) == re.findall(r"<<[^\n]+>>", text)


@pytest.mark.parametrize(
    "response",
    [
        "",
        "\n" * 1_000_000,  # quadratic for the upstream bullet/paragraph regexes
        " \n" * 500_000,
        "<" * 1_000_000,
        "x" * 1_000_000,
        bytes(random.Random(3).getrandbits(8) for _ in range(200_000)).decode("latin-1"),
        b"\xff\xfe\x00garbage\x00",
        None,
    ],
    ids=["empty", "newlines", "space-newlines", "brackets", "1MB", "binary", "bytes", "none"],
)
def test_bad_responses_are_scored_not_crashes(response):
    for iid in (*C.CEQ_IDS, C.BULLET_LISTS, C.NUMBER_PARAGRAPHS):
        kwargs = {
            C.REPEAT_PROMPT: {"prompt_to_repeat": "Answer:"},
            C.END_CHECKER: {"end_phrase": "Bye."},
            C.BULLET_LISTS: {"num_bullets": 2},
            C.NUMBER_PARAGRAPHS: {"num_paragraphs": 2},
        }.get(iid, {})
        result = check_response(response, iid, kwargs)
        assert result.strict in (True, False) and result.loose in (True, False)


# --- the evaluate module -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def metric():
    return load_metric(metrics_dir() / "format_compliance")


def test_metric_standalone_with_explicit_constraints(metric):
    out = metric.compute(
        predictions=["ANGRY", "<<sad>>", "Answer: happy", "oops"],
        references=["angry", "sad", "happy", "x"],
        instruction_id_list=[C.CAPITAL, C.TITLE, C.REPEAT_PROMPT, C.QUOTATION],
        instruction_kwargs=[{}, {}, {"prompt_to_repeat": "Answer:"}, {}],
    )
    assert out["format_strict"] == [1.0, 1.0, 1.0, 0.0]
    assert out["format_strict_change_case"] == [1.0, None, None, None]
    assert out["format_strict_wrapping"] == [None, 1.0, None, 0.0]


def test_metric_reads_constraints_from_sample_info_and_judge_for_cot(metric):
    info = [
        {"metadata": {"instruction_id": C.LOWERCASE, "kwargs": {}}},
        {"metadata": {"instruction_id": C.CHAIN_OF_THOUGHT, "kwargs": {}}},
        {"metadata": {"instruction_id": C.CHAIN_OF_THOUGHT, "kwargs": {}}},
    ]
    judgments = [
        {},
        {"reasoning": {"j": {"value": 1.0, "error": None}}},
        {"reasoning": {"j": {"value": None, "error": "HTTP 500"}}},
    ]
    out = metric.compute(
        predictions=["sad", "x", "y"], references=["", "", ""], sample_info=info, judgments=judgments
    )
    assert out["format_strict"] == [1.0, 1.0, None]
    assert out["cot_judge_failed"] == [None, 0.0, 1.0]
    no_judge = metric.compute(predictions=["sad", "x", "y"], references=["", "", ""], sample_info=info)
    assert no_judge["format_strict"] == [1.0, None, None]  # missing, never zero


def test_metric_without_constraints_says_what_to_pass(metric):
    with pytest.raises(ValueError, match="instruction_id_list"):
        metric.compute(predictions=["x"], references=["y"])


def test_metric_accepts_speech_ifeval_field_names(metric):
    out = metric.compute(
        predictions=["* a\n* b", "Bye. HOPE THIS HELPS."],
        references=["", ""],
        instruction_id_list=[[C.BULLET_LISTS], [C.END_CHECKER]],
        kwargs=[[{"num_bullets": 2}], [{"end_phrase": "Hope this helps.", "prompt_to_repeat": None}]],
    )
    assert out["format_strict"] == [1.0, 1.0]
