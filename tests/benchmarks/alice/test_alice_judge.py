"""The judged chain-of-thought path against a local OpenAI-compatible server: verdicts are used, failures
(HTTP errors, timeouts, unreadable replies) are counted and reported as missing, never as zero, and a rerun
is answered from the cache."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault, prompt_text
from tests.alice_testutil import isolated_cache  # noqa: F401

TASKS = "alice_s1_ser_cot,alice_s1_asr_cot"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def honest_reply(body):
    text = prompt_text(body)
    if "pull out the transcription" in text:
        return "Explanation: nothing in the reply is a transcript.\nResult: "
    if "shows reasoning" in text:
        return "Explanation: treating it as reasoning for the test.\nResult: YES"
    if "ground-truth answer" in text:
        return "Explanation: it agrees.\nResult: **YES**"
    return "Explanation: unexpected prompt.\nResult: NO"


def run(tmp_path: Path, base_url: str | None, judge_args: dict | None = None, tasks: str = TASKS):
    judge = ["openai"] if base_url else []
    args = [{"model": "judge-model", "base_url": base_url, **(judge_args or {})}] if base_url else []
    cfg = RunConfig(
        tasks=tasks,
        model="chance",
        limit="2",
        num_fewshot=[0, 1],
        output_path=str(tmp_path / "out"),
        log_samples=True,
        cache_dir=str(tmp_path / "cache"),
        bootstrap_resamples=50,
        judge=judge,
        judge_args=args,
        show_progress=False,
    )
    return run_evaluation(cfg)


def block(out, task, k):
    return out["results"][task][f"{k}-shot"]


def missing(value) -> bool:
    return value is None or value != value  # None in results.json, NaN in the returned dict


@pytest.mark.slow
def test_verdicts_are_used_retries_succeed_and_a_rerun_makes_no_calls(tmp_path):
    port = free_port()
    faults = [Fault("429", times=2, retry_after=0.05), Fault("500", times=1, retry_after=0.05)]
    with FakeOpenAIServer(reply=honest_reply, faults=faults, port=port) as server:
        out = run(tmp_path, server.base_url, {"max_retries": 3, "timeout": 5})
        first_calls = len(server.requests)
    for k in (0, 1):
        ser, asr = block(out, "alice_s1_ser_cot", k), block(out, "alice_s1_asr_cot", k)
        # `chance` answers with a bare label; only the judge's YES makes these 1.0
        assert ser["format_strict"] == 1.0 and ser["accuracy"] == 1.0 and ser["task_judge_failed"] == 0.0
        # the judge extracted an empty transcript: every reference word is deleted
        assert asr["wer"] == 1.0 and asr["task_judge_failed"] == 0.0
    judge = out["judges"]["judge-model"]
    # 2 tasks x 2 items x 2 k x 2 roles, less the identical judge prompts that are sent once
    assert 8 <= judge["requests_sent"] <= 16 and judge["failed_verdicts"] == 0
    assert first_calls == judge["requests_sent"] + 3  # two 429s and one 500 were retried
    records = [json.loads(line) for line in (Path(out["run_dir"]) / "samples_alice_s1_ser_cot.jsonl").open()]
    assert set(records[0]["judgments"]) == {"reasoning", "answer"}

    with FakeOpenAIServer(reply=honest_reply, port=port) as server:
        again = run(tmp_path, server.base_url, {"max_retries": 3, "timeout": 5})
        assert server.requests == []
    assert again["results"] == out["results"]


@pytest.mark.slow
def test_failed_judgments_are_counted_and_missing_not_zero(tmp_path):
    def reply(body):
        text = prompt_text(body)
        if "shows reasoning" in text:
            return "I believe the response reasons well."  # no `Result:` line: unreadable
        return honest_reply(body)

    faults = [
        Fault("500", times=100, match="ground-truth answer", retry_after=None),
        Fault("hang", times=100, match="pull out the transcription", hang_seconds=2.0),
    ]
    with FakeOpenAIServer(reply=reply, faults=faults, port=free_port()) as server:
        out = run(tmp_path, server.base_url, {"max_retries": 0, "timeout": 0.4})
    for k in (0, 1):
        ser, asr = block(out, "alice_s1_ser_cot", k), block(out, "alice_s1_asr_cot", k)
        assert missing(ser["format_strict"]) and ser["format_strict_missing"] == 2
        assert missing(ser["accuracy"]) and ser["accuracy_missing"] == 2
        assert ser["cot_judge_failed"] == 1.0 and ser["task_judge_failed"] == 1.0
        assert missing(asr["wer"]) and asr["task_judge_failed"] == 1.0
        assert ser["n"] == 2 and asr["n"] == 2  # the samples are kept, only their judged scores are missing
    assert out["judges"]["judge-model"]["failed_verdicts"] == 2 * 2 * 2 * 2  # every sample's role, counted
    records = [json.loads(line) for line in (Path(out["run_dir"]) / "samples_alice_s1_ser_cot.jsonl").open()]
    assert records[0]["judgments"]["answer"]["judge-model"]["error"].startswith("HTTP 500")
    assert records[0]["judgments"]["reasoning"]["judge-model"]["error"] == "unparsable verdict"
    report = (Path(out["run_dir"]) / "alice_report.md").read_text()
    assert re.search(r"\| judge-model \| \d+ \| 16 \|", report)


def test_without_a_judge_judged_scores_are_missing_and_the_run_completes(tmp_path):
    out = run(tmp_path, None, tasks="alice_s1_ser_cot,alice_s1_ser_ceq")
    cot, ceq = block(out, "alice_s1_ser_cot", 1), block(out, "alice_s1_ser_ceq", 1)
    assert missing(cot["format_strict"]) and missing(cot["accuracy"]) and cot["accuracy_missing"] == 2
    assert missing(cot.get("task_judge_failed"))
    assert not missing(ceq["format_strict"]) and not missing(ceq["accuracy"])
    report = (Path(out["run_dir"]) / "alice_report.md").read_text()
    assert "No judge was configured" in report


@pytest.mark.parametrize(
    "reply_text, expected", [("Result: yes", 1.0), ("Explanation: no.\nResult: NO", 0.0)]
)
def test_yes_no_verdict_forms(tmp_path, reply_text, expected):
    with FakeOpenAIServer(reply=lambda body: reply_text, port=free_port()) as server:
        out = run(tmp_path, server.base_url, tasks="alice_s1_gr_cot")
    assert block(out, "alice_s1_gr_cot", 0)["format_strict"] == expected
    assert block(out, "alice_s1_gr_cot", 0)["accuracy"] == expected
