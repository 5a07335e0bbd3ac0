"""Answer extraction (undoing each format), answer matching, WER normalizers, and the alice_task metric."""

from __future__ import annotations

import random

import pytest

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.extract import answer_matches, extract_answer, json_answer, normalize_choice
from audioeval.benchmarks.alice.wer import (
    alice_normalize,
    looks_degenerate,
    whisper_basic_normalize,
    word_errors,
)
from audioeval.config.parsers import get_parser
from audioeval.config.registry import TaskRegistry
from audioeval.resources import metrics_dir
from audioeval.results.scoring import SampleToScore, TaskScorer, load_metric
from tests.alice_testutil import isolated_cache  # noqa: F401


@pytest.mark.parametrize(
    "response, iid, kwargs, task, expected",
    [
        ('{"Emotion": "angry"}', C.JSON_FORMAT, {}, "ser", "angry"),
        ('```json\n{"gender": "Male", "confidence": "high"}\n```', C.JSON_FORMAT, {}, "gr", "Male"),
        # the task code picks the key, even when another string value comes first
        ('{"note": "clear voice", "gender": "female"}', C.JSON_FORMAT, {}, "gr", "female"),
        ('{"Content": "i need new shoes"}', C.JSON_FORMAT, {}, "asr", "i need new shoes"),
        ('{"answer": 3}', C.JSON_FORMAT, {}, "mmau", "3"),
        ('"happy"', C.JSON_FORMAT, {}, "ser", "happy"),
        ('Sure! {"emotion": "sad"} Hope it helps', C.JSON_FORMAT, {}, "ser", "sad"),
        ("not json at all", C.JSON_FORMAT, {}, "ser", "not json at all"),
        ('"angry"', C.QUOTATION, {}, "ser", "angry"),
        ("'angry'", C.QUOTATION, {}, "ser", "angry"),
        ("<<angry>>", C.TITLE, {}, "ser", "angry"),  # upstream deleted the answer with its brackets
        ("<<Emotion analysis>>\nsad", C.TITLE, {}, "ser", "sad"),  # a heading is dropped, as upstream
        ("The answer is: sad", C.REPEAT_PROMPT, {"prompt_to_repeat": "The answer is:"}, "ser", "sad"),
        ('"the ANSWER is: sad"', C.REPEAT_PROMPT, {"prompt_to_repeat": "The answer is:"}, "ser", "sad"),
        ("Answer:\nmale", C.REPEAT_PROMPT, {"prompt_to_repeat": "Answer:"}, "gr", "male"),
        ("happy\nHope this helps.", C.END_CHECKER, {"end_phrase": "Hope this helps."}, "ser", "happy"),
        ("two. HOPE THIS HELPS.", C.END_CHECKER, {"end_phrase": "Hope this helps."}, "mmau", "two."),
        ("[ANS] neutral", C.CAPITAL, {}, "ser", "neutral"),
        ("ANSWER: NEUTRAL", C.CAPITAL, {}, "ser", "NEUTRAL"),
        ("```\nHELLO WORLD\n```", C.CAPITAL, {}, "asr", "HELLO WORLD"),
        ("", C.TITLE, {}, "ser", ""),
    ],
)
def test_extract_answer(response, iid, kwargs, task, expected):
    assert extract_answer(response, iid, kwargs, task) == expected


def test_json_answer_returns_none_for_non_json():
    assert json_answer("angry", "ser") is None
    assert json_answer("[" * 40_000, "ser") is None  # too deep: not JSON, no RecursionError


@pytest.mark.parametrize(
    "prediction, label, task, expected",
    [
        ("The speaker sounds angry", "angry", "ser", True),
        ("not happy, rather sad", "sad", "ser", True),  # the last emotion word counts
        ("ANGRY!", "angry", "ser", True),
        ("calm", "neutral", "ser", False),
        ("fearful", "fearful", "ser", True),  # a label outside the four classes: exact match
        ("man", "Male", "gr", True),  # Man/Woman and Male/Female agree on both sides
        ("The speaker is a woman.", "Female", "gr", True),
        ("male", "Woman", "gr", False),
        ("female", "Male", "gr", False),  # "female" is not "male"
        ('"Three"', "three", "mmau", True),
        ("three speakers", "three", "mmau", False),
        ("nine o'clock", "nine o'clock", "mmau", True),
    ],
)
def test_answer_matches(prediction, label, task, expected):
    assert answer_matches(prediction, label, task) is expected


def test_normalize_choice():
    assert normalize_choice('```\n"[ANS] It is  Happy!"\n```') == "it is happy"


def test_alice_normalizer_keeps_letters_and_apostrophes():
    assert alice_normalize("It's 5 o'clock, Mr. Smith!") == "IT'S O'CLOCK MR SMITH"
    assert alice_normalize("") == ""


def test_whisper_basic_normalizer_drops_brackets_and_angle_marks():
    assert whisper_basic_normalize("Hello, <World>! [noise] (cough) It's fine.") == "hello world it s fine"


def test_word_errors():
    assert word_errors("HELLO THERE WORLD", "hello there world", "alice") == (0, 3)
    assert word_errors("HELLO THERE WORLD", "hello world", "alice") == (1, 3)
    assert word_errors("HELLO THERE WORLD", "", "alice") == (3, 3)
    assert word_errors("", "extra words", "alice") == (2, 0)
    assert word_errors("Hello, world!", "hello world", "whisper_basic") == (0, 2)


def test_degenerate_responses_true_loops_are_caught():
    assert looks_degenerate("The transcript is: " + "and then " * 30)
    assert looks_degenerate("ha" * 200)
    assert looks_degenerate("Step 1: " + "-" * 600)
    # a sentence repeated until the token limit, cut off inside a word
    sentence = "The speaker says that the weather is nice today. "
    assert looks_degenerate("Let me think.\n" + sentence * 20 + "The speaker sa")
    assert looks_degenerate("Answer: " + "I am fine, " * 25 + "I a")
    # a 40-word unit repeated 8 times
    unit = " ".join(f"w{i}" for i in range(40))
    assert looks_degenerate("Transcript: " + " ".join([unit] * 8))
    assert looks_degenerate("0" * 400)


def test_degenerate_responses_normal_text_is_not_flagged():
    assert not looks_degenerate("I listen to the clip. The speaker says: the cat sat on the mat.")
    assert not looks_degenerate("")
    # short repetitions that real speech and formatted answers contain
    assert not looks_degenerate("Step 1: the audio.\n" + "-" * 32 + "\nTranscript: hello there")
    assert not looks_degenerate("The speaker reads out the number " + "1234567890" * 4)
    assert not looks_degenerate("Result: " + "9" * 40)
    assert not looks_degenerate("The speaker laughs: " + "ha " * 12 + "that was funny")
    assert not looks_degenerate("Transcript: " + "ha " * 20)
    assert not looks_degenerate("She says: no, no, no, no, no, no, no, no, no, no.")
    table = "| word | count |\n|" + "-" * 40 + "|" + "-" * 40 + "|\n| the | 3 |"
    assert not looks_degenerate(table)
    assert not looks_degenerate("Answer:\n" + "=" * 80)


# --- parser and metric through the harness ------------------------------------------------------------------
def _info(task, iid, kwargs=None, category="ceq"):
    return {"metadata": {"task": task, "category": category, "instruction_id": iid, "kwargs": kwargs or {}}}


def test_parser_undoes_the_items_format():
    parse = get_parser("alice_answer")
    assert parse("<<angry>>", sample_info=_info("ser", C.TITLE)) == "angry"
    assert (
        parse("Answer: sad", sample_info=_info("ser", C.REPEAT_PROMPT, {"prompt_to_repeat": "Answer:"}))
        == "sad"
    )
    assert parse("  ", sample_info=_info("ser", C.TITLE)) is None
    assert parse("<<>>", sample_info=_info("ser", C.TITLE)) == "<<>>"
    assert (
        parse("Answer:", sample_info=_info("ser", C.REPEAT_PROMPT, {"prompt_to_repeat": "Answer:"})) is None
    )
    assert parse("Step 1 ... so angry", sample_info=_info("ser", C.CHAIN_OF_THOUGHT, category="cot")) == (
        "Step 1 ... so angry"
    )


@pytest.fixture(scope="module")
def registry():
    return TaskRegistry.discover()


def test_task_scorer_passes_sample_info_to_the_parser(registry):
    scorer = TaskScorer(registry.tasks["alice_s1_ser_ceq"])
    (record,) = scorer.score([SampleToScore("<<angry>>", "angry", _info("ser", C.TITLE))])
    assert record["prediction"] == "angry"
    assert record["scores"]["accuracy"] == 1.0
    assert record["scores"]["format_strict_wrapping"] == 1.0


@pytest.fixture(scope="module")
def task_metric():
    return load_metric(metrics_dir() / "alice_task")


def test_task_metric_ceq(task_metric):
    out = task_metric.compute(
        predictions=["Answer: HELLO WORLD", "<<happy>>", '{"gender": "woman"}'],
        references=["HELLO THERE WORLD", "happy", "Female"],
        tasks=["asr", "ser", "gr"],
        categories=["ceq", "ceq", "ceq"],
        instruction_id_list=[C.REPEAT_PROMPT, C.TITLE, C.JSON_FORMAT],
        instruction_kwargs=[{"prompt_to_repeat": "Answer:"}, {}, {}],
    )
    assert out["wer_errors"] == [1, None, None] and out["wer_words"] == [3, None, None]
    assert out["accuracy"] == [None, 1.0, 1.0]


def test_task_metric_cot_uses_judge_and_reports_failures(task_metric):
    info = [_info("asr", C.CHAIN_OF_THOUGHT, category="cot")] * 3 + [
        _info("ser", C.CHAIN_OF_THOUGHT, category="cot")
    ] * 2
    judgments = [
        {"transcript": {"j": {"value": "Hello world", "error": None}}},
        {"transcript": {"j": {"value": None, "error": "HTTP 500 after 3 attempt(s)"}}},
        {"transcript": {"j": {"value": "hello there world", "error": None}}},
        {"answer": {"j": {"value": 1.0, "error": None}}},
        {"answer": {"j": {"value": None, "error": "unparsable verdict"}}},
    ]
    responses = ["r", "r", "so: " + "hello " * 60, "x", "y"]
    refs = ["Hello there, world.", "hello", "hello there world", "sad", "sad"]
    out = task_metric.compute(predictions=responses, references=refs, sample_info=info, judgments=judgments)
    assert out["wer_errors"][:2] == [1, None] and out["wer_words"][:2] == [3, None]
    assert (out["wer_errors"][2], out["wer_words"][2]) == (3, 3)  # a looping response counts as empty
    assert out["degenerate"][:3] == [0.0, 0.0, 1.0]
    assert out["accuracy"][3:] == [1.0, None]
    assert out["task_judge_failed"] == [0.0, 1.0, 0.0, 0.0, 1.0]
    without = task_metric.compute(predictions=responses, references=refs, sample_info=info)
    assert without["accuracy"][3:] == [None, None] and without["wer_errors"][:2] == [None, None]


def test_task_metric_needs_the_task(task_metric):
    with pytest.raises(ValueError, match="tasks=\\[...\\]"):
        task_metric.compute(predictions=["x"], references=["y"])


@pytest.mark.parametrize(
    "response",
    ["", "x" * 1_000_000, bytes(random.Random(5).getrandbits(8) for _ in range(100_000)).decode("latin-1")],
    ids=["empty", "1MB", "binary"],
)
def test_bad_responses_are_scored(task_metric, response):
    ids = [*C.CEQ_IDS, *C.CEQ_IDS]
    kwargs = [
        {"prompt_to_repeat": "Answer:"}
        if i == C.REPEAT_PROMPT
        else {"end_phrase": "Bye."}
        if i == C.END_CHECKER
        else {}
        for i in ids
    ]
    tasks = ["asr"] * len(C.CEQ_IDS) + ["mmau"] * len(C.CEQ_IDS)
    out = task_metric.compute(
        predictions=[response] * len(ids),
        references=["HELLO WORLD"] * len(C.CEQ_IDS) + ["two"] * len(C.CEQ_IDS),
        tasks=tasks,
        categories=["ceq"] * len(ids),
        instruction_id_list=ids,
        instruction_kwargs=kwargs,
    )
    assert all(isinstance(e, int) and e >= 2 for e in out["wer_errors"][: len(C.CEQ_IDS)])
    assert out["accuracy"][len(C.CEQ_IDS) :] == [0.0] * len(C.CEQ_IDS)


def test_speech_ifeval_names_and_field_names_are_accepted(task_metric):
    # upstream passed the dataset name where the task code belonged; both work here
    assert (
        extract_answer('{"note": "x", "Gender": "Woman"}', C.JSON_FORMAT, None, "Gender_recognition")
        == "Woman"
    )
    assert answer_matches("a man", "Male", "GR")
    out = task_metric.compute(
        predictions=["The answer is: woman", '"Neutral"'],
        references=["Female", "neutral"],
        tasks=["Gender_recognition", "SER"],
        instruction_id_list=[[C.REPEAT_PROMPT], [C.QUOTATION]],
        kwargs=[[{"prompt_to_repeat": "The answer is:"}], [{}]],
    )
    assert out["accuracy"] == [1.0, 1.0]


def test_extract_takes_speech_ifeval_kwargs_lists():
    kwargs = [{"prompt_to_repeat": "Answer:", "end_phrase": None}]
    assert extract_answer("Answer: two", C.REPEAT_PROMPT, kwargs, "MMAU") == "two"
