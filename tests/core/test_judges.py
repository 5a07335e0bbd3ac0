"""LLM judges: verdicts reach the metrics, failures are counted and reported, reruns cost nothing."""

from __future__ import annotations

import socket

import pytest

import audioeval
from audioeval import Model, Response
from audioeval.config.verdicts import OutOfRange, result_text, score_0_10, yes_no
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault, prompt_text
from tests.conftest import latest_run, load_results, load_samples, run_cli


def test_verdict_readers():
    assert yes_no("Explanation: ok\nResult: YES") == 1.0
    assert yes_no("Result: no") == 0.0
    assert yes_no("**Result**: YES") is None or yes_no("**Result**: YES") == 1.0
    assert yes_no("I think yes") is None
    assert score_0_10("Score: 7.5/10") == 7.5 and score_0_10("0") == 0.0 and score_0_10("10/10") == 10.0
    assert score_0_10("no number here") is None
    # a number outside the scale is a failure of its own kind, never clamped into a score
    assert score_0_10("15") == OutOfRange(15.0, "0 to 10") and score_0_10("Score: -3") == OutOfRange(
        -3.0, "0 to 10"
    )
    assert str(score_0_10("11/10")) == "verdict 11 is outside the scale (0 to 10)"
    assert result_text("Explanation: x\nResult: the cat sat") == "the cat sat"
    assert result_text("Explanation: none\nResult:") == ""
    assert result_text("just text") is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _judge_reply(body: dict) -> str:
    text = prompt_text(body)
    if "Rate the answer" in text:
        first = text.split("\n")[1]
        return "8" if first.startswith("Reference") else "6"  # position-dependent, so the bias is visible
    if "**Response**: high" in text:
        return "Explanation: matches\nResult: YES"
    return "The answer seems plausible."  # prose without a verdict: a judge failure


def _args(toy_dir, out, cache, *judges):
    args = [
        "--tasks",
        "toy_tones_judged",
        "--include_path",
        str(toy_dir),
        "--model",
        "chance",
        "--output_path",
        str(out),
        "--log_samples",
        "--cache_dir",
        str(cache),
        "--no_progress",
        "--limit",
        "6",
    ]
    for judge_args in judges:
        args += ["--judge", "openai", "--judge_args", judge_args]
    return args


@pytest.mark.slow
def test_judged_run_counts_failures_and_rerun_is_free(toy_dir, tmp_path):
    port = _free_port()
    faults = [Fault("429", times=2), Fault("500", times=1)]
    with FakeOpenAIServer(reply=_judge_reply, faults=faults, port=port) as server:
        judge = f"model=judge-a,base_url={server.base_url},num_concurrent=4"
        code, out, err = run_cli(_args(toy_dir, tmp_path / "o1", tmp_path / "c", judge))
        assert code == 0, err
        first_calls = len(server.requests)
        code, _, err = run_cli(_args(toy_dir, tmp_path / "o2", tmp_path / "c", judge))
        assert code == 0, err
        assert len(server.requests) == first_calls  # every judgment came from the cache
    run_dir = latest_run(tmp_path / "o1")
    results = load_results(run_dir)
    k1 = results["results"]["toy_tones_judged"]["1-shot"]
    samples = [s for s in load_samples(run_dir, "toy_tones_judged") if s["shots"] == 1]
    highs = sum(s["response"] == "high" for s in samples)
    assert k1["judge_agrees@judge-a"] == 1.0 and k1["judge_agrees@judge-a_missing"] == 6 - highs
    assert k1["judge_quality@judge-a"] == 7.0  # mean of 8 and 6: both orders averaged
    quality = samples[0]["judgments"]["quality"]["judge-a"]
    assert quality["values"] == [8.0, 6.0] and len(quality["raw"]) == 2
    assert "quality" not in load_samples(run_dir, "toy_tones_judged")[0]["judgments"]  # `when: k > 0`
    judge = results["judges"]["judge-a"]
    assert judge["failed_verdicts"] > 0
    assert (
        judge["http_429"] == 2 and judge["http_5xx"] == 1 and judge["retries"] == 3 and judge["timeouts"] == 0
    )
    assert first_calls == judge["requests_sent"] + 3
    endpoint = results["timing"]["endpoints"]["judge judge-a"]
    assert endpoint["requests"] == judge["requests_sent"] and endpoint["http_429"] == 2
    assert 1 <= endpoint["peak_in_flight"] <= 4 and endpoint["latency_p50_s"] is not None
    assert load_results(latest_run(tmp_path / "o2"))["results"] == results["results"]


def test_two_judges_are_reported_separately(toy_dir, tmp_path):
    with FakeOpenAIServer(reply=_judge_reply) as a, FakeOpenAIServer(reply=lambda body: "Result: NO\n3") as b:
        code, _, err = run_cli(
            _args(
                toy_dir,
                tmp_path / "o",
                tmp_path / "c",
                f"model=judge-a,base_url={a.base_url}",
                f"model=judge-b,base_url={b.base_url}",
            )
        )
        assert code == 0, err
    k1 = load_results(latest_run(tmp_path / "o"))["results"]["toy_tones_judged"]["1-shot"]
    assert k1["judge_agrees@judge-b"] == 0.0 and k1["judge_quality@judge-b"] == 3.0
    assert "judge_agrees@judge-a" in k1


def test_without_a_judge_judged_metrics_are_missing_and_the_rest_completes(toy_dir, tmp_path):
    code, out, err = run_cli(_args(toy_dir, tmp_path / "o", tmp_path / "c"))
    assert code == 0, err
    k0 = load_results(latest_run(tmp_path / "o"))["results"]["toy_tones_judged"]["0-shot"]
    assert k0["judge_agrees"] is None and k0["judge_agrees_missing"] == 6 and k0["accuracy"] is not None


def test_judge_sampling_can_be_set_per_judge(toy_dir, tmp_path):
    with FakeOpenAIServer(reply=_judge_reply) as server:
        judge = f"model=reasoner,base_url={server.base_url},temperature=none,reasoning_effort=minimal"
        code, _, err = run_cli(_args(toy_dir, tmp_path / "o", tmp_path / "c", judge))
        assert code == 0, err
    body = server.requests[0]
    assert "temperature" not in body and body["reasoning_effort"] == "minimal"


class _Rambler(Model):
    """Answers episode 0 with more text than a judge prompt may hold, the others briefly."""

    name = "rambler"

    def generate(self, requests):
        return [Response(text="high " + "x" * 1_100_000 if r.rid.episode == 0 else "high") for r in requests]


@pytest.mark.slow
def test_an_answer_too_long_for_its_judge_prompt_is_a_counted_judge_failure_not_a_stop(toy_dir):
    with FakeOpenAIServer(reply=_judge_reply) as judge:
        result = audioeval.evaluate(
            tasks=["toy_tones_judged"], include_path=str(toy_dir), model=_Rambler(), limit=3, log_samples=True,
            judge=["openai"], judge_args=[f"model=j,base_url={judge.base_url}"], no_progress=True, bootstrap_iters=0,
        )  # fmt: skip
    samples = result.samples["toy_tones_judged"]
    for sample in samples:
        verdicts = [v for role in sample.judgments.values() for v in role.values()]
        if sample.episode == 0:
            assert all(v["value"] is None and "went past a rendering bound" in v["error"] for v in verdicts)
            # only the roles that apply fail: quality's `when: k > 0` keeps it out at k = 0
            assert set(sample.judgments) == ({"agrees"} if sample.shots == 0 else {"agrees", "quality"})
        else:
            assert all(v["error"] is None for v in verdicts if v["value"] is not None) and verdicts
    assert any("judge" in w for w in result.warnings)
