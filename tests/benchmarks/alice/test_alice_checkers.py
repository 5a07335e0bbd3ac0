"""Format-compliance checkers: Speech-IFEval's modified IFEval rules, strict and loose, and the
alice_format_compliance metric module."""

from __future__ import annotations

import random
import re

import pytest

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.checkers import (
    _count_marker_lines,
    _ifeval,
    check_response,
    follows,
    split_paragraphs,
    title_spans,
)
from audioeval.benchmarks.alice.sentences import count_sentences, english_punkt
from audioeval.resources import metrics_dir
from audioeval.results.scoring import load_metric
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


@pytest.mark.slow
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
    # upstream splits the stripped response: blank lines at either end are not empty middle paragraphs
    assert strict("  \n  \nFirst.\nSecond.\n \t\n  ", C.NUMBER_PARAGRAPHS, kwargs)
    assert strict(" \n *** First.\nSecond.", C.NUMBER_PARAGRAPHS, kwargs)


def upstream_paragraphs(value: str, num_paragraphs: int) -> bool:
    """Speech-IFEval's ParagraphChecker.check_following."""
    paragraphs = re.split(r"\s*\*\*\*\s*|\n{1,}", value.strip())
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index == 0 or index == len(paragraphs) - 1:
                count -= 1
            else:
                return False
    return count == num_paragraphs


def test_paragraph_count_matches_upstream_on_edge_cases():
    rng = random.Random(5)
    alphabet = [" ", "\n", "\n\n", "*", "***", "a", "b.", "\t", "\r", "\u00a0"]
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        for n in (1, 2, 3):
            assert follows(C.NUMBER_PARAGRAPHS, text, {"num_paragraphs": n}) == upstream_paragraphs(
                text, n
            ), text


def test_creative_writing_checks_from_ifeval():
    assert strict("A dog and a cat", C.KEYWORDS_EXIST, {"keywords": ["dog", "CAT"]})
    assert not strict("A dog only", C.KEYWORDS_EXIST, {"keywords": ["dog", "cat"]})
    assert strict("A dogma", C.FORBIDDEN_WORDS, {"forbidden_words": ["dog"]})
    assert not strict("A dog.", C.FORBIDDEN_WORDS, {"forbidden_words": ["dog"]})
    assert strict("one two three", C.NUMBER_WORDS, {"num_words": 3, "relation": "at least"})
    assert not strict("one two three", C.NUMBER_WORDS, {"num_words": 3, "relation": "less than"})
    assert strict("c++ is fine", C.KEYWORDS_EXIST, {"keywords": ["c++"]})  # not a valid regex: literal


def test_sentence_count_is_scored_offline_with_nltks_english_punkt():
    kwargs = {"num_sentences": 3, "relation": "at least"}
    # NLTK's own example: abbreviations (Mr.), initials (S. Bach) and lower-case starts need the trained model
    text = (
        "Punkt knows that the periods in Mr. Smith and Johann S. Bach\ndo not mark sentence boundaries.  "
        "And sometimes sentences\ncan start with non-capitalized words.  i is a good variable\nname."
    )
    assert count_sentences(text) == 3
    assert strict(text, C.NUMBER_SENTENCES, kwargs) is True
    assert strict(text, C.NUMBER_SENTENCES, {"num_sentences": 3, "relation": "less than"}) is False
    assert count_sentences("Dr. Watson met Mrs. Hudson at 10 a.m. on Baker St. today.") == 1
    assert strict("One sentence. Two sentences.", C.NUMBER_SENTENCES, kwargs) is False


def test_sentence_count_equals_nltk_sent_tokenize(tmp_path, monkeypatch):
    """nltk.sent_tokenize reads punkt_tab from an nltk_data folder; give it the shipped tables in that format
    and it must split every text exactly as the offline tokenizer does."""
    import nltk
    from punkt.data import english

    folder = tmp_path / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    (folder / "abbrev_types.txt").write_text("\n".join(sorted(english.ABBREV_TYPES)) + "\n")
    (folder / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(english.COLLOCATIONS)))
    (folder / "sent_starters.txt").write_text("\n".join(sorted(english.SENT_STARTERS)) + "\n")
    (folder / "ortho_context.tab").write_text(
        "".join(f"{k}\t{v}\n" for k, v in english.ORTHO_CONTEXT.items())
    )
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    nltk.tokenize._get_punkt_tokenizer.cache_clear()
    try:
        rng = random.Random(11)
        words = [
            "Mr.",
            "Smith",
            "went",
            "to",
            "Washington",
            "D.C.",
            "on",
            "Jan.",
            "5",
            "i.e.",
            "the",
            "U.S.",
            "he",
            "said",
            "3.5",
            "percent",
            "e.g.",
            "Corp.",
            "and",
            "Inc.",
            "But",
            "it",
            "rained",
            "?",
            "!",
            '"Yes."',
            "(no.)",
            "etc.",
            "St.",
            "Louis",
            "a.m.",
            "...",
            "Dr.",
            "However",
            "Ph.D.",
            "No.",
        ]
        texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(400)]
        for text in texts:
            assert english_punkt().tokenize(text) == nltk.sent_tokenize(text), text
    finally:
        nltk.tokenize._get_punkt_tokenizer.cache_clear()


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
    return load_metric(metrics_dir() / "alice_format_compliance")


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
