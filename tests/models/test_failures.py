"""A failed request is a typed `Failure` (kind, HTTP status, one-line detail): every client classifies its
failures into the same kinds, code decides on them, and `Response.error` stays the message users read."""

from __future__ import annotations

import pytest
from model_test_helpers import tone, user_request

from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.models.realtime import RealtimeModel
from audioeval.models.speech.openai_transcriptions import OpenAITranscriptionASR
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from audioeval.testing.fake_realtime import FakeRealtimeServer
from audioeval.types import FAILURE_KINDS, Failure, Response


def test_a_backend_that_passes_a_message_gets_a_failure_of_kind_backend():
    response = Response(text=None, error="CUDA out of memory")
    assert response.failure == Failure("backend", "CUDA out of memory")
    assert not response.ok and response.error == "CUDA out of memory"


def test_a_failure_reads_as_its_message_and_fills_the_error():
    failure = Failure("http", "HTTP 404 after 1 attempt(s): no such model", status=404)
    response = Response(text=None, failure=failure)
    assert response.error == str(failure) == "HTTP 404 after 1 attempt(s): no such model"
    assert Response(text="ok").failure is None and Response(text="ok").ok


def test_failure_kinds_are_a_closed_set():
    assert {"http", "timeout", "connection", "malformed", "refused", "limit", "backend", "asr"} <= set(
        FAILURE_KINDS
    )
    with pytest.raises(ValueError, match="use one of"):
        Failure("oops", "x")  # type: ignore[arg-type]


def _chat(server: FakeOpenAIServer, **args) -> OpenAIChatModel:
    model = OpenAIChatModel(model="m", base_url=server.base_url, max_retries=1, **args)
    model.settings.backoff_base = 0.01
    return model


@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        ("400", "refused", 400),
        ("413", "refused", 413),
        ("404", "http", 404),
        ("429", "rate_limited", 429),
        ("503", "server", 503),
        ("html", "malformed", None),
        ("disconnect", "connection", None),
    ],
)
def test_chat_completions_failures_are_classified(fault, kind, status):
    with FakeOpenAIServer(faults=[Fault(fault, times=9, retry_after=0.01)]) as server:
        (response,) = _chat(server).generate([user_request("q")])
    assert response.failure is not None and response.failure.kind == kind
    assert response.failure.status == status and response.error == str(response.failure)


def test_a_chat_timeout_is_of_kind_timeout():
    with FakeOpenAIServer(faults=[Fault("hang", times=9, hang_seconds=1)]) as server:
        (response,) = _chat(server, timeout=0.2).generate([user_request("q")])
    assert response.failure is not None and response.failure.kind == "timeout"
    assert response.error.startswith("APITimeoutError after 2 attempt(s)")


@pytest.mark.parametrize(
    ("fault", "kind"),
    [("invalid", "refused"), ("error", "server"), ("ratelimit", "rate_limited"), ("malformed", "malformed")],
)
def test_realtime_failures_are_classified(fault, kind):
    with FakeRealtimeServer() as server:
        model = RealtimeModel(model="gpt-realtime", base_url=server.base_url, max_retries=0)
        (response,) = model.generate([user_request(tone(300), f"q [fault:{fault}*9]")])
    assert response.failure is not None and response.failure.kind == kind


@pytest.mark.parametrize(("fault", "kind", "status"), [("400", "refused", 400), ("503", "server", 503)])
def test_transcription_failures_are_classified(fault, kind, status):
    with FakeOpenAIServer(
        transcribe=lambda wav, fields: "hello", transcription_faults=[Fault(fault, times=9)]
    ) as server:
        asr = OpenAITranscriptionASR(model="whisper-1", base_url=server.base_url, max_retries=1)
        asr.settings.backoff_base = 0.01
        (response,) = asr.generate([user_request(tone(300))])
    assert response.failure is not None and (response.failure.kind, response.failure.status) == (kind, status)
