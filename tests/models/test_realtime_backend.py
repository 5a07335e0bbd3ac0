"""`--model realtime` against the local Realtime server (GA event protocol): what goes on the wire, each fault
as a counted failure or a successful retry, session renewal, the key's error, identical answers for any
number in flight or processes, and runs killed or interrupted midway that resume without re-asking."""

from __future__ import annotations

import base64
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from model_test_helpers import tone, user_request

from audioeval.errors import ModelError
from audioeval.models.api.client import EndpointDown
from audioeval.models.realtime import RealtimeModel
from audioeval.models.registry import create_model
from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.testing.fake_realtime import RATE, FakeRealtimeServer, reply_words
from audioeval.types import Message, Request, RequestId, TextPart
from tests.conftest import (
    free_port,
    latest_run,
    load_results,
    load_samples,
    popen_interruptible,
    run_cli,
    run_two_processes,
)


def _model(server: FakeRealtimeServer, **args) -> RealtimeModel:
    model = RealtimeModel(model="gpt-realtime", base_url=server.base_url, **args)
    model.settings.backoff_base = 0.01  # retries in tests need not wait
    return model


def _ask(*parts, k: int = 0, max_new_tokens: int = 64) -> Request:
    return user_request(*parts, k=k, gen_kwargs={"max_new_tokens": max_new_tokens})


def _expected_text(server: FakeRealtimeServer) -> str:
    (key,) = server.attempts  # one request content reached the server
    return " ".join(reply_words(key))


def test_one_out_of_band_response_per_request_with_24khz_audio_and_text_demos():
    demo_clip, query_clip = tone(300, seconds=0.25), tone(500, seconds=0.5)
    request = Request(
        messages=(
            Message("system", (TextPart("Answer briefly."),)),
            _ask(demo_clip, "what is this?").messages[0],
            Message("assistant", (TextPart("a low tone"),)),
            _ask(query_clip, "and this?").messages[0],
        ),
        gen_kwargs={"max_new_tokens": 64, "temperature": 0.0},
        rid=RequestId("t", 1, 0),
    )
    with FakeRealtimeServer() as server:
        (response,) = _model(server, voice="marin").generate([request])
    assert response.ok and response.text == _expected_text(server)
    (sent,) = server.requests
    assert sent["conversation"] == "none" and sent["instructions"] == "Answer briefly."
    assert sent["max_output_tokens"] == 64 and sent["output_modalities"] == ["audio"]
    assert sent["audio"]["output"] == {"format": {"type": "audio/pcm", "rate": RATE}, "voice": "marin"}
    roles = [(item["role"], [c["type"] for c in item["content"]]) for item in sent["input"]]
    assert roles == [
        ("user", ["input_audio", "input_text"]),
        ("assistant", ["output_text"]),
        ("user", ["input_audio", "input_text"]),
    ]
    assert sent["input"][1]["content"][0]["text"] == "a low tone"
    pcm = np.frombuffer(base64.b64decode(sent["input"][2]["content"][0]["audio"]), dtype="<i2")
    assert len(pcm) == RATE // 2  # 0.5 s resampled from 16 kHz to the session's 24 kHz
    spectrum = np.abs(np.fft.rfft(pcm.astype(np.float64)))
    assert abs(np.argmax(spectrum) * RATE / len(pcm) - 500) < 5  # the same tone, at the new rate
    spoken = response.spoken
    assert spoken is not None and spoken.audio.sampling_rate == RATE and spoken.audio.seconds > 0.3
    assert spoken.transcript == response.text and 0 < spoken.time_to_first_audio_s <= spoken.generation_s
    assert RealtimeModel.speaks


def test_text_output_answers_in_text_without_audio():
    with FakeRealtimeServer() as server:
        (response,) = _model(server, output="text").generate([_ask(tone(400), "hi")])
    assert response.ok and response.text == _expected_text(server) and response.spoken is None
    assert server.requests[0]["output_modalities"] == ["text"] and "audio" not in server.requests[0]
    with FakeRealtimeServer() as server:  # an answer cut at the token limit is kept, and says so
        (cut,) = _model(server, output="text").generate([_ask(tone(400), "hi", max_new_tokens=2)])
    assert (
        cut.ok
        and len(cut.text.split()) == 2
        and cut.info == {"status": "incomplete", "reason": "max_output_tokens"}
    )


@pytest.mark.parametrize(
    "kind",
    ["error", "failed", "drop", "malformed", "truncated", "undecodable", "noaudio", "ratelimit", "hang"],
)
def test_each_retryable_fault_is_retried_once_then_counted_with_its_reason(kind):
    timeout = {"timeout": 0.5} if kind == "hang" else {}
    with FakeRealtimeServer() as server:
        model = _model(server, max_retries=1, **timeout)
        once, always = model.generate(
            [_ask(tone(300), f"q [fault:{kind}]"), _ask(tone(300), f"q [fault:{kind}*5]")]
        )
    reasons = {
        "error": "error server_error",
        "failed": "response failed",
        "drop": "connection dropped",
        "malformed": "malformed event",
        "truncated": "truncated audio",
        "undecodable": "undecodable audio",
        "noaudio": "no audio",
        "ratelimit": "error rate_limit_exceeded",
        "hang": "timeout",
    }
    assert once.ok and once.info["attempts"] == 2 and once.spoken is not None
    if kind == "ratelimit":  # the retry waited for the exhausted limit to reset (0.2 s)
        assert once.latency_s >= 0.2 and model.stats.http_429 == 3  # 1 + 2 rate-limited attempts
    assert always.text is None and always.error.startswith(f"{reasons[kind]} after 2 attempt(s)")
    assert model.stats.retries == 2


def test_a_refused_request_is_a_counted_failure_at_once_and_an_unknown_event_is_ignored():
    with FakeRealtimeServer() as server:
        model = _model(server, max_consecutive_failures=2)
        responses = model.generate(
            [_ask(tone(300), f"q{i} [fault:invalid*9]") for i in range(4)]
            + [_ask(tone(300), "new [fault:unknown]")]
        )
    for refused in responses[:4]:  # never retried, and never taken for the endpoint being down
        assert refused.error == "error invalid_value after 1 attempt(s): The request was refused (injected)."
    assert sum(server.attempts.values()) == 5
    unknown = responses[4]
    assert unknown.ok and unknown.info == {"ignored_events": ["response.sparkle.delta"]}


def test_an_endpoint_failing_every_response_is_declared_down_naming_it():
    with FakeRealtimeServer() as server:
        model = _model(server, max_retries=0, max_consecutive_failures=2, num_concurrent=1)
        with pytest.raises(EndpointDown, match=r"127\.0\.0\.1.*is not answering.*error server_error"):
            model.generate([_ask(tone(300), f"q{i} [fault:error*9]") for i in range(4)])


def test_sessions_are_renewed_before_their_time_and_on_expiry_without_spending_a_retry():
    requests = [_ask(tone(300 + i), f"q{i}") for i in range(4)]
    with FakeRealtimeServer(latency=(0.15, 0.15), max_session_s=0.25) as server:
        expiring = _model(server, max_retries=0, num_concurrent=1).generate(requests)
    assert all(r.ok for r in expiring) and "session_expired" in server.errors_sent
    assert sum(r.info.get("sessions_renewed", 0) for r in expiring) == server.errors_sent.count(
        "session_expired"
    )
    with FakeRealtimeServer(latency=(0.15, 0.15), max_session_s=0.25) as server:
        model = _model(server, max_retries=0, num_concurrent=1)
        model.client.session_lifetime = 0.1  # what session_lifetime=3300 does for the API's 60 minutes
        renewed = model.generate(requests)
    assert all(r.ok and not r.info for r in renewed) and server.errors_sent == [] and server.sessions == 4
    assert [r.text for r in renewed] == [r.text for r in expiring]
    with FakeRealtimeServer() as server:
        (response,) = _model(server, max_retries=0).generate([_ask(tone(300), "q [fault:expired]")])
    assert response.ok and response.info == {"sessions_renewed": 1} and server.sessions == 2


def test_a_pooled_session_closed_while_idle_is_replaced_without_spending_a_retry():
    requests = [_ask(tone(300), "first [fault:closeidle]"), _ask(tone(400), "second")]
    with FakeRealtimeServer() as server:
        model = _model(server, max_retries=0, num_concurrent=1)
        first, second = model.generate(requests)
    assert first.ok and first.info == {}
    assert second.ok and second.info == {"sessions_renewed": 1} and server.sessions == 2
    assert sum(server.attempts.values()) == 2  # the second request reached the server once


def test_a_rejected_key_names_its_environment_variable(monkeypatch):
    monkeypatch.setenv("MY_REALTIME_KEY", "sk-wrong")
    with FakeRealtimeServer(api_key="sk-right") as server:
        model = _model(server, api_key_env="MY_REALTIME_KEY")
        with pytest.raises(ModelError, match=r"rejected the API key from \$MY_REALTIME_KEY \(HTTP 401"):
            model.generate([_ask(tone(300), "q")])
    monkeypatch.setenv("MY_REALTIME_KEY", "sk-right")
    with FakeRealtimeServer(api_key="sk-right") as server:
        (response,) = _model(server, api_key_env="MY_REALTIME_KEY").generate([_ask(tone(300), "q")])
    assert response.ok and server.handshakes[0]["authorization"] == "Bearer sk-right"


def test_a_rejected_key_stops_a_run_with_one_line_naming_the_variable(toy_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_REALTIME_KEY", "sk-wrong")
    with FakeRealtimeServer(api_key="sk-right") as server:
        args = _toy_run(toy_dir, tmp_path / "out", tmp_path / "cache", server.port)
        args[args.index("--model_args") + 1] += ",api_key_env=MY_REALTIME_KEY"
        code, _, err = run_cli(args)
    assert code != 0 and "rejected the API key from $MY_REALTIME_KEY" in err and "Traceback" not in err
    assert "sk-wrong" not in err and server.attempts == {}


def test_the_beta_session_shape_is_refused_by_the_server_and_named_by_the_backend(monkeypatch):
    import audioeval.models.realtime as realtime

    beta = {k: v for k, v in realtime.session_update("audio", "alloy").items() if k != "type"}
    with FakeRealtimeServer() as server:
        model = _model(server)
        model.client.session_update = beta
        with pytest.raises(ModelError, match="refused the session settings.*session.type"):
            model.generate([_ask(tone(300), "q")])
    assert server.errors_sent == ["missing_required_parameter"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"output": "speech"}, "output=speech: model 'realtime' must be one of: audio, text; got 'speech'."),
        ({"max_output_tokens": "lots"}, "max_output_tokens=lots: model 'realtime' expects an integer (from 1 to 4096), inf or none"),
        ({"max_output_tokens": 0}, "max_output_tokens=0: model 'realtime' expects an integer (from 1 to 4096), inf or none"),
        ({"max_output_tokens": 4097}, "max_output_tokens=4097: model 'realtime' expects an integer (from 1 to 4096), inf or none"),
        ({"model": ""}, "model=: model 'realtime' must be non-empty, got ''."),
        ({"session_lifetime": 0}, "session_lifetime=0: model 'realtime' must be at least 1, got 0."),
        ({"websocket_url": "ftp://x"}, "websocket_url=ftp://x: not a URL with a host and a scheme wss or ws"),
    ],
)  # fmt: skip
def test_bad_model_args_are_one_clear_error_before_anything_connects(args, message):
    with pytest.raises(ModelError) as err:
        create_model("realtime", {"model": "m", "base_url": "http://127.0.0.1:1/v1", **args}, 1, 0)
    assert message in str(err.value) and len(str(err.value).splitlines()) == 1


def test_valid_token_limits_reach_the_model_as_given():
    for limit in (None, 1, 4096, "inf"):
        model = create_model(
            "realtime", {"model": "m", "base_url": "http://127.0.0.1:1/v1", "max_output_tokens": limit}, 1, 0
        )
        assert model.max_output_tokens == limit and model.identity["max_output_tokens"] == limit


def _signature(responses) -> list[tuple]:
    return [(r.text, r.error, r.spoken.audio.sha256 if r.spoken else None) for r in responses]


@pytest.mark.slow
def test_answers_are_the_same_one_or_thirty_two_in_flight():
    requests = [_ask(tone(200 + 10 * i), f"q{i % 7}", k=i) for i in range(48)]
    with FakeRealtimeServer(latency=(0.0, 0.05)) as server:
        one = _model(server, num_concurrent=1).generate(requests)
        many = _model(server, num_concurrent=32).generate(requests)
        assert server.max_in_flight > 4  # the 32 were in flight together, not one by one
    assert all(r.ok for r in one) and _signature(one) == _signature(many)
    assert len(set(_signature(one))) == 48


# --- whole runs ---------------------------------------------------------------------------------------------
def _toy_run(toy_dir: Path, out: Path, cache: Path, port: int, *extra: str) -> list[str]:
    return [
        "--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "realtime",
        "--model_args", f"model=gpt-realtime,base_url=http://127.0.0.1:{port}/v1,num_concurrent=2",
        "--output_path", str(out), "--cache_dir", str(cache), "--log_samples", "--no_progress",
        "--asr", "none", "--spoken_text", "transcript", *extra,  # the backend's own text is scored
    ]  # fmt: skip


TIMED = ("spoken_time_to_first_audio_s", "spoken_real_time_factor")  # measurements: they differ run to run


def _untimed(run: Path) -> tuple[dict, list[dict]]:
    """results and samples without what was measured rather than answered."""
    results = load_results(run)["results"]
    for per_k in results.values():
        for block in per_k.values():
            for key in [k for k in block if k.startswith(TIMED)]:
                block.pop(key)
    samples = load_samples(run, "toy_tones")
    for sample in samples:
        for key in TIMED:
            sample.get("scores", {}).pop(key, None)
        for key in ("time_to_first_audio_s", "generation_s", "real_time_factor"):
            sample.get("spoken", {}).pop(key, None)
    return results, samples


def _wait_for_answers(
    server: FakeRealtimeServer, count: int, proc: subprocess.Popen, timeout: float = 120
) -> None:
    deadline = time.time() + timeout
    while server.answered() < count:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.time() < deadline, "the run did not reach the expected number of responses"
        time.sleep(0.05)


def _cached(cache: Path) -> int:
    with sqlite3.connect(cache / "responses.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_run_killed_or_interrupted_midway_resumes_without_re_requesting_answers(toy_dir, tmp_path, sig):
    port, cache = free_port(), tmp_path / "cache"
    with FakeRealtimeServer(latency=(0.05, 0.1), port=port) as server:
        cmd = [sys.executable, "-m", "audioeval", *_toy_run(toy_dir, tmp_path / "cut", cache, port)]
        proc = popen_interruptible(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_answers(server, 12, proc)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL), stderr[-2000:]
        assert "Traceback" not in stderr
        cached = _cached(cache)
        assert 0 < cached < 36
        before = dict(server.attempts)
        code, _, err = run_cli(_toy_run(toy_dir, tmp_path / "resumed", cache, port))
        assert code == 0, err
        assert sum(server.attempts.values()) - sum(before.values()) == 36 - cached  # only the missing ones
        code, _, err = run_cli(_toy_run(toy_dir, tmp_path / "fresh", tmp_path / "fresh-cache", port))
        assert code == 0, err
    resumed, fresh = latest_run(tmp_path / "resumed"), latest_run(tmp_path / "fresh")
    assert load_results(resumed)["timing"]["cached_responses"] == cached
    assert _untimed(resumed) == _untimed(fresh)


@pytest.mark.slow
def test_two_processes_give_the_results_of_one(toy_dir, tmp_path):
    with FakeRealtimeServer(latency=(0.0, 0.05)) as server:
        args = _toy_run(toy_dir, tmp_path / "two", tmp_path / "c2", server.port)
        proc = run_two_processes(args, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        code, _, err = run_cli(_toy_run(toy_dir, tmp_path / "one", tmp_path / "c1", server.port))
        assert code == 0, err
    two, one = latest_run(tmp_path / "two"), latest_run(tmp_path / "one")
    assert load_results(two)["world_size"] == 2
    assert _untimed(one) == _untimed(two)


def test_adu_bench_end_to_end_on_a_realtime_model(tmp_path):
    def judge(body: dict) -> str:
        return "7"

    with FakeRealtimeServer() as model_server, FakeOpenAIServer(reply=judge) as judge_server:
        code, out, err = run_cli(
            ["--tasks", "adu_general", "--limit", "2", "--model", "realtime",
             "--model_args", f"model=gpt-realtime,base_url={model_server.base_url}",
             "--judge", "openai", "--judge_args", f"model=judge,base_url={judge_server.base_url}",
             "--output_path", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"),
             "--log_samples", "--no_progress", "--bootstrap_iters", "100", "--spoken_text", "transcript",
             "--asr", "none"]
        )  # fmt: skip
        assert code == 0, err
        assert sum(model_server.attempts.values()) == 2 and len(judge_server.requests) == 4  # both orders
    run_dir = latest_run(tmp_path / "out")
    assert run_dir.parent.name == "realtime__gpt-realtime"
    metrics = load_results(run_dir)["results"]["adu_general"]["0-shot"]
    assert metrics["score"] == 7.0 and metrics["judge_failure_rate"] == 0.0
    samples = [json.loads(line) for line in (run_dir / "samples_adu_general.jsonl").open()]
    transcripts = {" ".join(reply_words(key)) for key in model_server.attempts}
    assert {s["response"] for s in samples} == transcripts  # the model's transcript reached the judge
    judged = "\n".join(json.dumps(r) for r in judge_server.requests)
    assert all(t in judged for t in transcripts)


def test_a_session_that_declares_another_audio_rate_is_refused():
    from audioeval.models.api.realtime_events import Session
    from audioeval.models.api.realtime_session import SessionFailure, _check_formats

    _check_formats(
        Session.model_validate({"audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}})
    )
    with pytest.raises(SessionFailure, match="input audio is .*16000.*not 24 kHz PCM"):
        _check_formats(
            Session.model_validate({"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}})
        )


@pytest.mark.slow
def test_the_standalone_server_serves_a_run_from_its_own_process():
    cmd = [sys.executable, "-m", "audioeval.testing.fake_realtime", "--latency", "0,0.05"]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        base_url = json.loads(proc.stdout.readline())["base_url"]
        model = RealtimeModel(model="gpt-realtime", base_url=base_url, num_concurrent=2)
        responses = model.generate([_ask(tone(300 + i), f"q{i}") for i in range(3)])
        proc.stdin.write("stats\n")
        proc.stdin.flush()
        stats = json.loads(proc.stdout.readline())
        proc.stdin.close()
    assert all(r.ok for r in responses) and stats["attempts"] == 3 and len(stats["timings"]) == 3
