"""What a hostile or broken endpoint can send back: events of the wrong shape, the beta Realtime protocol, WAV
answers that lie about themselves, replies that never end, a server that never says hello. Each is one clear
line or a counted failure with its reason: no traceback, no hang, nothing cached that should not be; a bad
row already in the cache is a miss, never a crash."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from model_test_helpers import tone, user_request

import audioeval.models.api.http as http_module
import audioeval.models.api.realtime_session as session_module
from audioeval.errors import ModelError, UsageError
from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.models.realtime import RealtimeModel, spoken_answer
from audioeval.models.registry import create_model
from audioeval.models.speech.openai_transcriptions import OpenAITranscriptionASR
from audioeval.models.speech.tts import MAX_SPOKEN_CHARS, TtsModel
from audioeval.run.cache import SPOKEN_KEY, ResponseCache
from audioeval.run.serving import Server
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault, wav_bytes
from audioeval.testing.fake_realtime import FakeRealtimeServer
from audioeval.types import Response

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"

# --- Realtime: events of the wrong shape ------------------------------------------------------------------


def _realtime(server: FakeRealtimeServer, **args) -> RealtimeModel:
    model = RealtimeModel(model="gpt-realtime", base_url=server.base_url, **{"max_retries": 1, **args})
    model.settings.backoff_base = 0.01
    return model


@pytest.mark.parametrize(
    ("fault", "field"),
    [
        ("errortext", "error"),
        ("resetsoon", "reset_seconds"),
        ("limitsnumber", "rate_limits"),
        ("donetext", "response"),
        ("detailstext", "status_details"),
    ],
)
def test_a_response_event_of_the_wrong_shape_is_a_counted_malformed_event(fault, field):
    with FakeRealtimeServer() as server:
        (response,) = _realtime(server).generate([user_request(tone(300), f"q [fault:{fault}*9]")])
    assert response.failure is not None and response.failure.kind == "malformed"
    assert response.error.startswith("malformed event after 2 attempt(s)") and field in response.error


@pytest.mark.parametrize(
    ("fault", "field"), [("ratefast", "rate"), ("sessionweird", "session"), ("audiopcm", "audio")]
)
def test_a_session_updated_of_the_wrong_shape_is_a_counted_malformed_event(fault, field):
    with FakeRealtimeServer(session_faults=[fault, fault]) as server:
        model = _realtime(server)
        (failed,) = model.generate([user_request(tone(300), "q")])
        (later,) = model.generate([user_request(tone(300), "r")])  # the third session behaves
    assert failed.failure is not None and failed.failure.kind == "malformed"
    assert (
        failed.error.startswith("malformed event after 2 attempt(s): session.updated")
        and field in failed.error
    )
    assert later.ok and server.sessions == 3


def test_beta_events_stop_the_run_once_without_retries():
    with FakeRealtimeServer() as server:
        model = _realtime(server, max_retries=6)
        with pytest.raises(ModelError) as caught:
            model.generate([user_request(tone(300), "q [fault:beta*9]")])
    message = str(caught.value)
    assert "beta Realtime protocol (response.audio.delta" in message and "ignores" in message
    assert sum(server.attempts.values()) == 1  # asked once: no retry meets anything else


def test_beta_events_beside_the_ga_ones_are_ignored_and_said_once(caplog):
    with FakeRealtimeServer() as server, caplog.at_level(logging.WARNING, logger="audioeval"):
        responses = _realtime(server).generate(
            [user_request(tone(300), f"q{i} [fault:betatoo*9]") for i in range(3)]
        )
    assert all(r.ok and "response.audio.delta" in r.info["ignored_events"] for r in responses)
    said = [r for r in caplog.records if "beta Realtime protocol" in r.getMessage()]
    assert len(said) == 1 and "GA events of the same responses were read" in said[0].getMessage()


def test_a_server_that_never_sends_session_created_is_named_for_what_did_not_arrive():
    with FakeRealtimeServer(session_faults=["nocreated"]) as server:
        model = _realtime(server, max_retries=0, timeout=0.5)
        (response,) = model.generate([user_request(tone(300), "q")])
    assert response.failure is not None and response.failure.kind == "timeout"
    assert "no session.created within 0.5 s" in response.error and not server.attempts


def test_an_endless_realtime_answer_is_cut_and_counted(monkeypatch):
    monkeypatch.setattr(session_module, "MAX_ANSWER_AUDIO_BYTES", 4000)
    with FakeRealtimeServer() as server:
        (response,) = _realtime(server).generate([user_request(tone(300), "q")])
    assert response.failure is not None and response.failure.kind == "limit"
    assert response.error.startswith("answer too large after 1 attempt(s)")


def test_a_token_limit_outside_the_realtime_range_is_refused_before_the_run():
    with pytest.raises(
        ModelError,
        match=r"max_output_tokens=5000: model 'realtime' expects an integer \(from 1 to 4096\), inf",
    ):
        create_model(
            "realtime",
            {"model": "gpt-realtime", "base_url": "http://127.0.0.1:9/v1", "max_output_tokens": 5000},
            1,
            0,
        )
    with pytest.raises(
        UsageError, match="max_new_tokens=5000: the Realtime API takes max_output_tokens from 1"
    ):
        RealtimeModel.check_gen_kwargs({"max_new_tokens": 5000}, "task t", {"model": "m"})
    RealtimeModel.check_gen_kwargs(
        {"max_new_tokens": 5000}, "task t", {"model": "m", "max_output_tokens": "inf"}
    )
    RealtimeModel.check_gen_kwargs({"max_new_tokens": 4096}, "task t", {"model": "m"})


def test_realtime_audio_keeps_the_extreme_samples_it_was_sent():
    from audioeval.models.api.realtime_session import Answer

    pcm = np.array([-32768, 32767, -1, 0, 1], dtype="<i2")
    clip = spoken_answer(Answer("t", pcm.tobytes(), "t", None, 0.1, "completed")).audio
    assert clip.pcm16.tobytes() == pcm.tobytes() and clip.wav_bytes()[44:] == pcm.tobytes()


# --- Chat Completions: WAV answers that lie, replies that never end -----------------------------------------


def _spoken_chat(server: FakeOpenAIServer, **args) -> OpenAIChatModel:
    model = OpenAIChatModel(model="m", base_url=server.base_url, audio_output=True, max_retries=1, **args)
    model.settings.backoff_base = 0.01
    return model


def _serve_once(model, store, request):
    async def run():
        server = Server(model, store, kind="generate")
        try:
            return await server.generate(request)
        finally:
            await server.close()

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        ("zero_hz", "at 0 Hz"),
        ("huge_hz", "at 4,000,000,000 Hz"),
        ("zero_frames", "no samples"),
        ("truncated_audio", "the header says"),
    ],
)
def test_a_wav_answer_that_lies_is_retried_then_counted_and_never_cached(tmp_path, fault, why):
    store = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(faults=[Fault(fault, times=9)]) as server:
        response = _serve_once(_spoken_chat(server), store, user_request("q"))
    assert response.failure is not None and response.failure.kind == "malformed"
    assert response.error.startswith("malformed reply after 2 attempt(s)") and why in response.error
    assert store.count() == 0


def test_a_bad_spoken_answer_already_in_the_cache_is_a_miss(tmp_path):
    store = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:
        model = _spoken_chat(server)
        first = _serve_once(model, store, user_request("q"))
        assert first.ok and store.count() == 1
        # as a cache written before replies were checked could hold it: the blob turned into a 0 Hz WAV
        sha = first.spoken.audio.sha256
        store._db.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (wav_bytes(b"\x00\x01" * 8, 0), sha))
        again = _serve_once(model, store, user_request("q"))
        assert again.ok and not again.cached and len(server.requests) == 2  # asked again, no crash
        for damage in ('"not json', json.dumps({SPOKEN_KEY: "a string"}), json.dumps([1, 2])):
            store._db.execute("UPDATE responses SET info = ?", (damage,))
            assert _serve_once(model, store, user_request("q")).ok
    assert len(server.requests) == 5


def test_a_spoken_answer_is_stored_and_transcribed_bit_for_bit(tmp_path):
    store = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer(faults=[Fault("full_scale", times=9)]) as server:
        server.transcribe = server.hear_own_audio  # a perfect ASR of exactly the bytes the server sent
        answer = _serve_once(_spoken_chat(server), store, user_request("q"))
        sent = answer.spoken.audio.pcm16
        assert sent[0] == -32768 and sent[1] == 32767
        asr = OpenAITranscriptionASR(model="whisper-1", base_url=server.base_url)
        (heard,) = asr.generate([user_request(answer.spoken.audio)])
        assert heard.ok and heard.text == answer.text  # the ASR got the very samples the model sent
        assert asr.stats.latency.quantile(0.5) is not None  # the ASR endpoint's latency is measured
    (cached,) = store.get_many([next(iter(store._db.execute("SELECT key FROM responses")))[0]]).values()
    assert cached.spoken.audio.pcm16.tobytes() == sent.tobytes()
    assert cached.spoken.audio.sha256 == answer.spoken.audio.sha256


def test_a_gzip_bomb_is_cut_at_the_reply_cap_and_counted(monkeypatch):
    monkeypatch.setattr(http_module, "MAX_REPLY_BYTES", 2**20)
    with FakeOpenAIServer(faults=[Fault("gzip_bomb", times=9, bomb_mb=8)]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url)
        (response,) = model.generate([user_request("q")])
    assert response.failure is not None and response.failure.kind == "limit"
    assert "reply too large after 1 attempt(s)" in response.error and len(server.requests) == 1


def test_tts_refuses_to_speak_a_book():
    model = TtsModel(text_model="openai", model="m", base_url="http://127.0.0.1:9/v1")
    answer = model._spoken(Response(text="word " * MAX_SPOKEN_CHARS), 0.0)
    assert answer.failure is not None and answer.failure.kind == "limit"
    assert f"tts speaks at most {MAX_SPOKEN_CHARS:,}" in answer.error


# --- arguments ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_base_url_that_is_not_a_url_is_one_line_exit_2(tmp_path):
    with pytest.raises(
        ModelError, match="base_url=notaurl: not a URL with a host and a scheme http or https"
    ):
        OpenAIChatModel(model="m", base_url="notaurl")
    args = ["--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "1", "--model", "openai",
            "--model_args", "model=m,base_url=notaurl", "--output_path", str(tmp_path)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "audioeval", *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "base_url=notaurl: not a URL with a host and a scheme http or https" in done.stderr


def test_openai_gets_max_completion_tokens_and_other_servers_max_tokens(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIChatModel(model="gpt-4o-audio-preview").token_limit_field == "max_completion_tokens"
    assert OpenAIChatModel(model="m", base_url="http://127.0.0.1:8000/v1").token_limit_field == "max_tokens"
    assert OpenAIChatModel(model="o4-mini", base_url="http://127.0.0.1:8000/v1").token_limit_field == (
        "max_completion_tokens"
    )
    pinned = OpenAIChatModel(model="gpt-4o", token_limit_field="max_tokens")
    assert pinned.token_limit_field == "max_tokens"
