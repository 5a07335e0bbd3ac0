"""The OpenAI-compatible backend against a local server: audio parts, concurrency, retries, timeouts, keys."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from audioeval.audio.wav import decode_wav
from audioeval.errors import ModelError
from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.models.registry import create_model
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, Response, TextPart
from tests.conftest import latest_run, load_results, load_samples, run_cli


def _request(text: str, clip: AudioClip | None = None, **gen) -> Request:
    parts = (TextPart(text),) + ((AudioPart(clip),) if clip is not None else ())
    return Request(
        messages=(Message("system", (TextPart("be brief"),)), Message("user", parts)),
        gen_kwargs=gen,
        rid=RequestId("t", 0, 0),
    )


def test_audio_goes_as_input_audio_wav_and_kwargs_are_mapped():
    clip = AudioClip.from_array(0.2 * np.sin(np.arange(1600) / 5.0), 16000)
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url)
        (response,) = model.generate([_request("what is this?", clip, max_new_tokens=7)])
    assert response.ok and response.text.startswith("reply ")
    body = server.requests[0]
    assert body["max_tokens"] == 7 and body["temperature"] == 0.0 and body["model"] == "m"
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    audio = body["messages"][1]["content"][1]
    assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
    samples, rate = decode_wav(base64.b64decode(audio["input_audio"]["data"]))
    assert rate == 16000 and np.array_equal(samples, clip.samples)


def test_requests_run_concurrently_up_to_num_concurrent():
    with FakeOpenAIServer(delay=0.3) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, num_concurrent=4)
        responses = model.generate([_request(f"q{i}") for i in range(12)])
    assert all(r.ok for r in responses)
    assert server.max_in_flight == 4


def test_retry_after_is_honoured_and_5xx_retried():
    faults = [Fault("429", times=1, match="slow", retry_after=0.6), Fault("500", times=2, match="flaky")]
    with FakeOpenAIServer(faults=faults) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, num_concurrent=2)
        slow, flaky = model.generate([_request("slow"), _request("flaky")])
    assert slow.ok and slow.latency_s >= 0.6 and slow.info["attempts"] == 2
    assert flaky.ok and flaky.info["attempts"] == 3


def test_timeouts_give_up_with_an_error_response():
    with FakeOpenAIServer(faults=[Fault("hang", times=10, match="stuck", hang_seconds=2)]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, timeout=0.3, max_retries=1)
        stuck, fine = model.generate([_request("stuck"), _request("fine")])
    assert stuck.text is None and "Timeout" in stuck.error and fine.ok


def test_missing_key_for_remote_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="set the environment variable OPENAI_API_KEY"):
        OpenAIChatModel(model="m", base_url="https://api.example.com/v1")


def test_rejected_key_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with FakeOpenAIServer(faults=[Fault("401", times=5)]) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url)
        with pytest.raises(ModelError, match="rejected the API key"):
            model.generate([_request("x")])


@pytest.mark.slow
def test_run_counts_api_failures_and_never_writes_the_key(toy_dir, tmp_path, monkeypatch):
    secret = "sk-test-very-secret-123"
    monkeypatch.setenv("MY_KEY", secret)
    faults = [Fault("hang", times=100, match="[Demo 1]", hang_seconds=1.5)]  # every 1-shot request times out
    with FakeOpenAIServer(faults=faults) as server:
        code, out, err = run_cli(
            [
                "--tasks",
                "toy_tones",
                "--include_path",
                str(toy_dir),
                "--model",
                "openai",
                "--num_fewshot",
                "0,1",
                "--model_args",
                f"model=m,base_url={server.base_url},api_key_env=MY_KEY,timeout=0.3,max_retries=0",
                "--limit",
                "3",
                "--output_path",
                str(tmp_path / "o"),
                "--log_samples",
                "--cache_dir",
                str(tmp_path / "c"),
                "--no_progress",
            ]
        )
        assert code == 0, err
        assert all(h.get("authorization") == f"Bearer {secret}" for h in server.headers_seen)
    run_dir = latest_run(tmp_path / "o")
    results = load_results(run_dir)
    block = results["results"]["toy_tones"]["1-shot"]
    assert (
        block["errors"] == 3
        and block["n"] == 3
        and block["accuracy_missing"] == 3
        and block["accuracy"] is None
    )
    assert "errors" not in results["results"]["toy_tones"]["0-shot"]
    assert results["timing"]["errors"] == 3
    samples = [s for s in load_samples(run_dir, "toy_tones") if s["shots"] == 1]
    assert all(s["error"] and s["response"] is None for s in samples)
    everything = out + err + "".join(p.read_text() for p in run_dir.iterdir() if p.is_file())
    assert secret not in everything
    assert (tmp_path / "c" / "responses.sqlite").exists()
    import sqlite3

    with sqlite3.connect(tmp_path / "c" / "responses.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 3  # failures are never cached


def test_token_limit_field_for_newer_models():
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(
            model="m", base_url=server.base_url, token_limit_field="max_completion_tokens"
        )
        model.generate([_request("q", max_new_tokens=9)])
    assert server.requests[0]["max_completion_tokens"] == 9 and "max_tokens" not in server.requests[0]
    with pytest.raises(
        ModelError, match="token_limit_field=tokens: model 'openai' must be one of: max_tokens, max_c"
    ):
        create_model(
            "openai", {"model": "m", "base_url": server.base_url, "token_limit_field": "tokens"}, 1, 0
        )


@pytest.mark.parametrize(
    "name, reasoning",
    [
        ("gpt-5-mini", True),
        ("gpt-5-mini-2025-08-07", True),
        ("gpt-5", True),
        ("gpt-5.1", True),
        ("o1", True),
        ("o3-mini", True),
        ("o4-mini", True),
        ("openai/o3", True),
        ("gpt-4o", False),
        ("gpt-4o-mini", False),
        ("qwen2.5-72b", False),
        ("omni-7b", False),
        ("my-o3-proxy", False),
    ],
)
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(name, reasoning):
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(model=name, base_url=server.base_url, max_retries=0)
        (response,) = model.generate([_request("q", max_new_tokens=9, temperature=0.0)])
    assert response.ok, response.error  # the server refuses max_tokens/temperature 0 for reasoning names
    body = server.requests[0]
    if reasoning:
        assert body["max_completion_tokens"] == 9 and "max_tokens" not in body and "temperature" not in body
    else:
        assert body["max_tokens"] == 9 and body["temperature"] == 0.0


def test_family_and_token_limit_field_override_the_name():
    with FakeOpenAIServer() as server:
        chat = OpenAIChatModel(model="gpt-5-mini", base_url=server.base_url, family="chat", max_retries=0)
        (refused,) = chat.generate([_request("q", max_new_tokens=9)])
        proxy = OpenAIChatModel(model="my-o3-proxy", base_url=server.base_url, family="reasoning")
        proxy.generate([_request("q", max_new_tokens=9)])
        legacy = OpenAIChatModel(
            model="o3", base_url=server.base_url, token_limit_field="max_tokens", max_retries=0
        )
        legacy.generate([_request("q", max_new_tokens=9)])
        sampled = OpenAIChatModel(model="o3", base_url=server.base_url)
        (ok,) = sampled.generate([_request("q", max_new_tokens=9, temperature=1.0)])
    # family=chat is taken at its word: the real (here: fake) OpenAI endpoint refuses it
    assert server.requests[0]["max_tokens"] == 9 and server.requests[0]["temperature"] == 0.0
    assert not refused.ok and "HTTP 400" in refused.error and "max_completion_tokens" in refused.error
    assert server.requests[1]["max_completion_tokens"] == 9 and "temperature" not in server.requests[1]
    assert server.requests[2]["max_tokens"] == 9 and "temperature" not in server.requests[2]
    assert ok.ok and server.requests[3]["temperature"] == 1.0  # an explicit temperature is still sent
    assert chat.identity != OpenAIChatModel(model="gpt-5-mini", base_url=server.base_url).identity
    with pytest.raises(
        ModelError, match="family=thinking: model 'openai' must be one of: auto, chat, reasoning"
    ):
        create_model("openai", {"model": "m", "base_url": server.base_url, "family": "thinking"}, 1, 0)


def _clip(seed: int, seconds: float = 0.5) -> AudioClip:
    rng = np.random.default_rng(seed)
    return AudioClip.from_array(0.3 * rng.standard_normal(int(16000 * seconds)), 16000)


def test_the_body_sent_is_what_the_sdk_would_send():
    """The lean body (audio spliced in, built once) carries exactly the fields the SDK call carried:
    `completion_payload` plus the model, with `extra_body` merged into the top level."""
    from audioeval.models.openai_chat import completion_payload, request_body

    request = _request(
        'say "hi"\n\u00e9\u4e2d \U0001f3b5',
        _clip(1),
        max_new_tokens=5,
        until=["\n"],
        **{"extra_body.min_tokens": 2},
    )
    payload = completion_payload(request, {"max_tokens": 9})
    extra = payload.pop("extra_body")
    expected = {"model": "m", **payload, **extra}
    assert request_body("m", request, {"max_tokens": 9}).loads() == expected
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url)
        (response,) = model.generate([request])
    assert response.ok and server.requests == [expected]


@pytest.mark.parametrize("text", ['say "hi"\n\u00e9\u4e2d \U0001f3b5', "\x00audioeval:encoded\x00", ""])
def test_the_body_is_the_json_of_its_document_with_each_clip_spliced_in_uncopied(text):
    """What is sent is what json.dumps writes for the document, whatever its text holds (even the text that
    stands in for a clip while the rest is encoded); each clip's base64 goes out as its own bytes object."""
    from audioeval.models.api.body import Encoded, JsonBody

    clips = [b"QUJD" * 1000, b"REVG"]
    audio = [{"type": "input_audio", "input_audio": {"data": Encoded(c), "format": "wav"}} for c in clips]
    document = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}, *audio]}],
        "temperature": 0.0,
        "stop": ["\n", text],
        "seed": None,
        "top_k": 5,
    }
    body = JsonBody.of(document)
    assert body.to_bytes() == json.dumps(document, default=lambda e: e.data.decode("ascii")).encode()
    assert body.size == len(body.to_bytes())
    assert [c for c in body.chunks if len(c) >= 4 and c in clips] == clips
    assert all(any(chunk is c for chunk in body.chunks) for c in clips)


def test_a_requests_audio_is_read_and_encoded_off_the_event_loop(monkeypatch):
    """The serving path hands a request's clips to the backend's preparation on a worker thread, so the
    event loop that sends and receives never spends its time encoding audio."""
    import asyncio
    import threading

    import audioeval.types as types_module
    from audioeval.run.cache import NoCache
    from audioeval.run.serving import Server

    encoders: list[threading.Thread] = []
    real = types_module.b64encode
    monkeypatch.setattr(
        types_module, "b64encode", lambda b: encoders.append(threading.current_thread()) or real(b)
    )
    clips = [_clip(20), _clip(21)]
    request = Request((Message("user", tuple(AudioPart(c) for c in clips)),), {}, RequestId("t", 2, 0))

    async def serve() -> tuple[threading.Thread, Response]:
        server = Server(model, NoCache(), kind="generate")
        try:
            return threading.current_thread(), await server.generate(request)
        finally:
            await server.close()

    with FakeOpenAIServer() as fake:
        model = OpenAIChatModel(model="m", base_url=fake.base_url)
        loop_thread, response = asyncio.run(serve())
    assert response.ok and len(encoders) == 2 and loop_thread not in encoders
    parts = fake.requests[0]["messages"][0]["content"]
    sent = [decode_wav(base64.b64decode(p["input_audio"]["data"]))[0] for p in parts]
    assert all(np.array_equal(s, c.samples) for s, c in zip(sent, clips, strict=True))


def test_each_clip_is_encoded_once_however_often_it_is_sent(monkeypatch):
    import audioeval.types as types_module

    encoded = []
    real = types_module.pcm16_wav
    monkeypatch.setattr(types_module, "pcm16_wav", lambda s, r: encoded.append(1) or real(s, r))
    demos, query = [_clip(10 + i) for i in range(3)], _clip(0)
    again = AudioClip.from_array(query.samples, 16000)  # the same content in another object
    requests = [
        Request(
            (Message("user", tuple(AudioPart(c) for c in [*demos[:k], query])),), {}, RequestId("t", k, 0)
        )
        for k in (0, 1, 3)
    ]
    requests.append(Request((Message("user", (AudioPart(again),)),), {}, RequestId("t", 0, 1)))
    with FakeOpenAIServer() as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, num_concurrent=4)
        assert all(r.ok for r in model.generate(requests))
    assert len(encoded) == 4  # three demos and the query, each once
    bodies = sorted(server.requests, key=lambda b: len(b["messages"][0]["content"]))  # arrival order varies
    for body, request in zip(bodies, sorted(requests, key=lambda r: len(r.clips)), strict=True):
        parts = body["messages"][0]["content"]
        sent = [decode_wav(base64.b64decode(p["input_audio"]["data"]))[0] for p in parts]
        assert len(sent) == len(request.clips)
        assert all(np.array_equal(s, c.samples) for s, c in zip(sent, request.clips, strict=True))


def test_endpoint_url_keeps_the_query_and_headers_carry_key_org_and_project(monkeypatch):
    from audioeval.models.api.http import endpoint_url_and_headers

    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-2")
    url, headers = endpoint_url_and_headers(
        "sk-3", "https://h.example/openai/v1/?api-version=7", "chat/completions"
    )
    assert url == "https://h.example/openai/v1/chat/completions?api-version=7"
    assert headers["Authorization"] == "Bearer sk-3" and headers["Content-Type"] == "application/json"
    assert headers["OpenAI-Organization"] == "org-1" and headers["OpenAI-Project"] == "proj-2"
    assert not [h for h in headers if h.lower().startswith("x-stainless")]


@pytest.mark.parametrize(
    "reply, message",
    [
        (b'{"error": {"message": "bad audio", "type": "invalid_request_error"}}', "bad audio"),  # OpenAI
        (
            b'{"object": "error", "message": "At most 8 audio(s) may be provided", "code": 400}',
            "At most 8",
        ),  # vLLM
        (b'{"detail": "Not Found"}', "Not Found"),  # FastAPI
        (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
    ],
)
def test_an_error_reply_is_reported_with_the_servers_message(reply, message):
    from audioeval.models.api.client import error_message

    assert error_message(reply).startswith(message)


def test_a_reply_that_is_not_a_completion_is_retried_then_counted_as_malformed():
    with FakeOpenAIServer(
        faults=[Fault("html", times=1, match="once"), Fault("html", times=9, match="always")]
    ) as server:
        model = OpenAIChatModel(model="m", base_url=server.base_url, max_retries=2)
        model.settings.backoff_base = 0.01
        once, always = model.generate([_request("once"), _request("always")])
    assert once.ok and once.info["attempts"] == 2
    assert always.text is None and always.error.startswith("malformed reply after 3 attempt(s)")


def test_credentials_in_the_base_url_go_as_basic_auth_as_the_sdk_sent_them():
    with FakeOpenAIServer() as server:
        url = server.base_url.replace("http://", "http://user:pw@") + "?api-version=1"
        model = OpenAIChatModel(model="m", base_url=url)
        (response,) = model.generate([_request("q")])
    assert (
        response.ok
        and server.headers_seen[0]["authorization"] == "Basic " + base64.b64encode(b"user:pw").decode()
    )
