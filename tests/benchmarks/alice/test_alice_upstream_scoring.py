"""`--task_args scoring=upstream`: CEQ answers are extracted and matched exactly as ALICE's evaluation_main.py
does, its known bugs included, while the default scoring keeps the fixes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.extract import answer_matches, extract_answer
from audioeval.benchmarks.alice.parser import alice_answer
from audioeval.benchmarks.alice.upstream import answer_matches_upstream, extract_answer_upstream, scoring_mode
from audioeval.cli import main
from audioeval.models.base import Model
from audioeval.resources import metrics_dir
from audioeval.results.scoring import load_metric
from audioeval.types import Request, Response
from tests.alice_testutil import isolated_cache  # noqa: F401


@pytest.mark.parametrize(
    "response, iid, kwargs, upstream, fixed",
    [
        # the title check deleted the bracketed answer with its brackets
        ("<<angry>>", C.TITLE, {}, "", "angry"),
        ("<<Emotion>>\nsad", C.TITLE, {}, "sad", "sad"),
        # JSON: the per-task key list never applied; the first string value wins
        ('{"reasoning": "low pitch", "gender": "male"}', C.JSON_FORMAT, {}, "low pitch", "male"),
        ('```json\n{"Emotion": "happy"}\n```', C.JSON_FORMAT, {}, "happy", "happy"),
        ('{"count": 3}', C.JSON_FORMAT, {}, '{"count": 3}', "3"),  # no string value: not parsed
        # phrases are removed without stripping surrounding quotes first
        ('"The answer is: sad"', C.REPEAT_PROMPT, {"prompt_to_repeat": "The answer is:"}, '"The answer is: sad"', "sad"),
        ('"sad\nHope this helps."', C.END_CHECKER, {"end_phrase": "Hope this helps."}, '"sad\nHope this helps."', "sad"),
        ("sad\nHope this helps.", C.END_CHECKER, {"end_phrase": "Hope this helps."}, "sad", "sad"),
        # both answer-prefix patterns are removed in turn
        ("[ANS] Answer: happy", C.CAPITAL, {}, "happy", "Answer: happy"),
    ],
)  # fmt: skip
def test_upstream_extraction_keeps_its_bugs_and_the_default_fixes_them(
    response, iid, kwargs, upstream, fixed
):
    assert extract_answer_upstream(response, iid, kwargs) == upstream
    assert extract_answer(response, iid, kwargs, "gr") == fixed


@pytest.mark.parametrize(
    "answer, label, upstream, fixed",
    [
        ("The speaker is male.", "Male", False, True),  # Male/Female labels needed an exact match
        ("male", "Male", True, True),
        ("The speaker is a man.", "Man", True, True),
        ("male", "Man", False, True),  # man/woman and male/female were never mapped onto each other
        ("I hear sadness, so: sad", "sad", True, True),
        ("", "angry", False, False),
    ],
)
def test_upstream_accuracy_rule(answer, label, upstream, fixed):
    assert answer_matches_upstream(answer, label) is upstream
    assert answer_matches(answer, label, "gr" if label.lower() in ("male", "man") else "ser") is fixed


def test_scoring_mode_comes_from_the_task_parameter():
    meta = {"category": "ceq", "instruction_id": C.TITLE, "kwargs": {}, "task": "ser"}
    assert alice_answer("<<angry>>", {"metadata": meta, "params": {"scoring": "upstream"}}) is None
    assert alice_answer("<<angry>>", {"metadata": meta, "params": {"scoring": "fixed"}}) == "angry"
    assert alice_answer("<<angry>>", {"metadata": meta}) == "angry"
    with pytest.raises(ValueError, match="scoring='paper'"):
        scoring_mode({"params": {"scoring": "paper"}})


def test_metric_module_takes_scoring():
    metric = load_metric(metrics_dir() / "alice_task")
    args = dict(
        predictions=["<<angry>>", "The speaker is male.", '"HELLO THERE WORLD"'],
        references=["angry", "Male", "HELLO THERE WORLD"],
        tasks=["ser", "gr", "asr"],
        categories=["ceq"] * 3,
        instruction_id_list=[C.TITLE, C.CAPITAL, C.QUOTATION],
        instruction_kwargs=[{}, {}, {}],
    )
    assert metric.compute(**args)["accuracy"] == [1.0, 1.0, None]
    upstream = metric.compute(**args, scoring="upstream")
    assert upstream["accuracy"] == [0.0, 0.0, None]
    assert (upstream["wer_errors"][2], upstream["wer_words"][2]) == (0, 3)


class TitledOracle(Model):
    """Answers every item with its label in title brackets: `<<label>>`. Requests carry no label, so it
    rebuilds each episode from the task it was prepared with."""

    name = "titled-oracle"

    def prepare(self, tasks: list[Any]) -> None:
        self.tasks = {t.name: t for t in tasks}

    def generate(self, requests: list[Request]) -> list[Response]:
        labels = [self.tasks[r.rid.task].episode(r.rid.episode)["query"]["label"] for r in requests]
        return [Response(text=f"<<{label}>>") for label in labels]


def _accuracy(tmp_path: Path, scoring: str) -> dict:
    out = tmp_path / scoring
    code = main(
        ["--tasks", "alice_s1_ser_ceq", "--model", "titled-oracle", "--limit", "7", "--num_fewshot", "0"]
        + ["--task_args", f"scoring={scoring}", "--output_path", str(out), "--cache_dir", str(tmp_path / "c")]
        + ["--bootstrap_iters", "0", "--no_progress"]
    )
    assert code == 0
    (results,) = out.glob("*/*/results.json")
    return json.loads(results.read_text())["results"]["alice_s1_ser_ceq"]["0-shot"]


@pytest.mark.slow
def test_run_with_upstream_scoring_reproduces_the_title_bug(tmp_path, monkeypatch):
    import audioeval.models.registry as models

    monkeypatch.setitem(
        models.CORE_BACKENDS, "titled-oracle", models.Backend(f"{__name__}:TitledOracle", "test")
    )
    fixed, upstream = _accuracy(tmp_path, "fixed"), _accuracy(tmp_path, "upstream")
    assert fixed["accuracy"] == 1.0
    # one item in seven is a title item: upstream deletes its answer; format compliance is the same
    assert upstream["accuracy"] == pytest.approx(6 / 7)
    assert upstream["format_strict"] == fixed["format_strict"]
    assert upstream["parse_failure_rate"] == pytest.approx(1 / 7)
