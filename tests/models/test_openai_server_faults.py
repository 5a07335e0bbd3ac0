"""`--model openai` against a self-hosted server that is not up, does not serve the model, or refuses requests
(the same faults as tests/models/test_vllm_real.py, against local stand-in servers, so they run without vLLM)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from model_test_helpers import tone, user_request

from audioeval.errors import ModelError
from audioeval.models.api.client import EndpointDown
from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _VLLMLike:
    """Answers like vLLM's server: GET /v1/models lists `served`; a chat request for another model gets 404, one
    with more than `audio_limit` audio parts 400 with vLLM's message, others a reply."""

    def __init__(self, served: list[str], audio_limit: int = 2) -> None:
        self.chat_requests = 0
        self.models_status = 200  # what GET /models answers (503: a server still loading)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                if outer.models_status != 200:
                    return self._send(outer.models_status, {"error": {"message": "loading"}})
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in served]})

            def do_POST(self):  # noqa: N802
                outer.chat_requests += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if body["model"] not in served:
                    message = f"The model `{body['model']}` does not exist."
                    return self._send(
                        404, {"error": {"message": message, "type": "NotFoundError", "code": 404}}
                    )
                clips = sum(
                    part.get("type") == "input_audio"
                    for m in body["messages"]
                    if isinstance(m["content"], list)
                    for part in m["content"]
                )
                if clips > audio_limit:
                    message = f"At most {audio_limit} audio(s) may be provided in one prompt."
                    return self._send(
                        400, {"error": {"message": message, "type": "BadRequestError", "code": 400}}
                    )
                reply = {
                    "message": {"role": "assistant", "content": "ok"},
                    "index": 0,
                    "finish_reason": "stop",
                }
                self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                                 "choices": [reply]})  # fmt: skip

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_server_that_never_comes_up_is_waited_for_with_a_message_then_named_in_the_error(caplog):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    model = OpenAIChatModel(model="m", base_url=url, wait_for_server=1, max_retries=6)
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="audioeval"), pytest.raises(EndpointDown) as caught:
        model.generate([user_request(f"q{i}") for i in range(3)])
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"waiting up to 1 s for {url} to come up" in m and "refused" in m for m in messages)
    assert f"{url} (model m) is not answering: nothing took a connection for 1 s" in str(caught.value)
    assert "wait_for_server=SECONDS" in str(caught.value)
    # no request was sent to retry on its own: the run ends after the wait, not after six more backoffs
    assert model.stats.retries == 0 and time.monotonic() - started < 30


def test_a_server_that_answers_but_is_not_ready_still_gets_the_requests_after_the_wait(caplog):
    with _VLLMLike(served=["m"]) as server:
        server.models_status = 503  # GET /models says "loading" for ever; chat answers
        model = OpenAIChatModel(model="m", base_url=server.base_url, wait_for_server=1)
        with caplog.at_level(logging.INFO, logger="audioeval"):
            (response,) = model.generate([user_request("q")])
    assert response.ok and response.text == "ok"
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"did not answer GET {server.base_url}/models within" in m for m in messages)


def test_a_model_name_the_server_does_not_serve_is_an_error_listing_what_it_serves():
    with _VLLMLike(served=["qwen2-audio", "whisper"]) as server:
        model = OpenAIChatModel(model="Qwen/Qwen2-Audio-7B-Instruct", base_url=server.base_url)
        with pytest.raises(ModelError) as caught:
            model.generate([user_request("q")])
        assert str(caught.value) == (
            f"{server.base_url} does not serve a model named 'Qwen/Qwen2-Audio-7B-Instruct'; it serves: "
            "qwen2-audio, whisper (GET /models). Pass one of those with --model_args model=NAME."
        )
        served = OpenAIChatModel(model="qwen2-audio", base_url=server.base_url)
        (response,) = served.generate([user_request("q")])
        assert response.ok and response.text == "ok"


def test_prompts_over_the_servers_audio_limit_are_counted_failures_that_never_take_the_endpoint_down():
    with _VLLMLike(served=["tiny"], audio_limit=2) as server:
        model = OpenAIChatModel(model="tiny", base_url=server.base_url, max_consecutive_failures=3)
        over = [user_request(tone(200 + i), tone(300), tone(400), " which?") for i in range(8)]
        responses = model.generate([*over, user_request(tone(500), " which?")])
    assert server.chat_requests == 9  # each sent once: a 400 is not retried
    for response in responses[:8]:
        assert not response.ok
        assert (
            "HTTP 400" in response.error
            and "At most 2 audio(s) may be provided in one prompt" in response.error
        )
        assert "[3 sent; vLLM: raise the server's --limit-mm-per-prompt]" in response.error
    assert responses[8].ok


def test_a_400_on_every_request_stays_a_counted_failure_and_a_404_on_every_request_still_takes_it_down():
    with FakeOpenAIServer(faults=[Fault("400", times=100)]) as endpoint:
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, max_consecutive_failures=3)
        responses = model.generate([user_request(f"q{i}") for i in range(6)])
    assert all("HTTP 400" in r.error for r in responses)
    with FakeOpenAIServer(
        faults=[Fault("404", times=100)]
    ) as endpoint:  # no GET /models here: nothing to list
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, max_consecutive_failures=3)
        with pytest.raises(EndpointDown, match="last status: HTTP 404"):
            model.generate([user_request(f"q{i}") for i in range(6)])
