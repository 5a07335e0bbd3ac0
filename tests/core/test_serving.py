"""The serving path and the API client on their own: deduplication, caching as responses arrive, adaptive
concurrency, Retry-After handling, endpoints that are down, and the merge of sample files."""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import pytest

import audioeval.models.api.policy as api_policy
from audioeval.errors import UsageError
from audioeval.models.api.client import EndpointDown
from audioeval.models.api.concurrency import AdaptiveLimit
from audioeval.models.base import Model
from audioeval.models.endpoint_stats import EndpointStats
from audioeval.models.openai_chat import OpenAIChatModel
from audioeval.results.outputs import SampleLog
from audioeval.results.sample_record import SampleRecord
from audioeval.run.cache import ResponseCache
from audioeval.run.serving import Server
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from audioeval.types import Message, Request, RequestId, Response, TextPart


def _request(text: str, episode: int = 0) -> Request:
    return Request(
        messages=(Message("user", (TextPart(text),)),), gen_kwargs={}, rid=RequestId("t", 0, episode)
    )


class RecordingModel(Model):
    """A batch backend that records what each generate() call received."""

    name = "recording"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls: list[list[str]] = []

    def generate(self, requests):
        self.calls.append([r.messages[0].text for r in requests])
        return [Response(text=r.messages[0].text.upper()) for r in requests]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_identical_requests_are_sent_once_and_responses_are_cached_as_they_arrive(tmp_path):
    store = ResponseCache(tmp_path / "c.sqlite")

    async def run(model):
        server = Server(model, store, kind="generate")
        first = server.submit([_request("a"), _request("b"), _request("a", episode=1)])
        again = server.submit([_request("a", episode=2)])  # while the first "a" is still in flight
        responses = await asyncio.gather(*first, *again)
        await server.close()
        return responses

    with FakeOpenAIServer(delay=0.2) as endpoint:
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url)
        a, b, a_twin, a_later = asyncio.run(run(model))
        assert len(endpoint.requests) == 2  # "a" once, "b" once
        assert a.text == a_twin.text == a_later.text and a_twin.cached and not a.cached
        assert store.count() == 2 and model.stats.requests == 2
        cached = asyncio.run(run(model))  # everything is in the store now
        assert len(endpoint.requests) == 2 and all(r.cached for r in cached)

    batch = RecordingModel(batch_size=2)  # another identity: nothing of the above is in the store for it
    responses = asyncio.run(run(batch))
    assert batch.calls == [["a", "b"]] and [r.text for r in responses] == ["A", "B", "A", "A"]


@pytest.mark.parametrize("persistent", [False, True])
def test_a_request_answered_earlier_in_the_run_is_not_sent_again(tmp_path, persistent):
    """With or without --no_cache, whether an identical request is re-sent must not depend on whether its twin
    is still in flight (timing), so the run's own answers are reused; they are not counted as cache hits,
    which are responses of a previous run."""
    from audioeval.run.cache import NoCache

    async def run(model):
        store = ResponseCache(tmp_path / "c.sqlite") if persistent else NoCache()
        server = Server(model, store, kind="generate")
        first = await server.generate(_request("a"))
        later = await server.generate(_request("a", episode=1))  # the first is answered by now
        await server.close()
        return first, later, server.cache_hits

    model = RecordingModel(batch_size=4)
    first, later, hits = asyncio.run(run(model))
    assert model.calls == [["a"]] and first.text == later.text == "A"
    assert later.cached and not first.cached and hits == 0


def test_a_batch_backend_gets_length_sorted_chunks_of_its_batch_size(tmp_path):
    from audioeval.run.cache import NoCache

    model = RecordingModel(batch_size=2)

    async def run():
        server = Server(model, NoCache(), kind="generate")
        futures = server.submit([_request(t) for t in ("bb", "a", "dddd", "ccc", "a")])
        out = await asyncio.gather(*futures)
        await server.close()
        return out

    responses = asyncio.run(run())
    assert [r.text for r in responses] == ["BB", "A", "DDDD", "CCC", "A"]
    assert model.calls == [["dddd", "ccc"], ["bb", "a"]]  # the twin "a" is not generated again
    assert model.stats.requests == 4 and model.stats.peak_in_flight == 2


def test_aimd_halves_once_per_round_grows_back_and_never_exceeds_the_maximum():
    stats = EndpointStats()

    async def scenario():
        limit = AdaptiveLimit(start=8, maximum=10, stats=stats)
        slots = [await limit.acquire() for _ in range(8)]
        assert stats.in_flight == 8
        lowered = [limit.release(s, overloaded=True) for s in slots[:3]]
        assert lowered == [True, False, False] and limit.allowed == 4  # one cut for one round of signals
        for s in slots[3:]:
            limit.release(s)
        for _ in range(500):  # a long calm stretch
            limit.release(await limit.acquire())
        return limit

    limit = asyncio.run(scenario())
    assert limit.allowed == 10 and stats.peak_in_flight == 8 and stats.concurrency_min == 4


@pytest.mark.slow
def test_aimd_backs_off_on_429_and_never_exceeds_max_concurrent():
    faults = [Fault("429", times=6, retry_after=0.01)]
    with FakeOpenAIServer(latency=(0.02, 0.06), faults=faults) as endpoint:
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, num_concurrent=8)
        responses = model.generate([_request(f"q{i}") for i in range(40)])
    assert all(r.ok for r in responses)
    assert model.stats.http_429 == 6 and model.stats.retries == 6
    assert model.stats.concurrency_min < 8 and endpoint.max_in_flight <= 8

    with FakeOpenAIServer(latency=(0.02, 0.06)) as endpoint:
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, num_concurrent=2, max_concurrent=6)
        model.generate([_request(f"q{i}") for i in range(120)])
    assert 2 < endpoint.max_in_flight <= 6 and model.stats.peak_in_flight <= 6


def test_retry_after_over_the_cap_is_capped_and_the_long_wait_logged(monkeypatch, caplog):
    monkeypatch.setattr(api_policy, "LONG_WAIT_S", 0.1)  # "long" for a test
    faults = [Fault("429", times=1, retry_after=86400)]
    with FakeOpenAIServer(faults=faults) as endpoint, caplog.at_level(logging.INFO, logger="audioeval"):
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, max_retry_after=0.3)
        (response,) = model.generate([_request("q")])
    assert response.ok and 0.3 <= response.latency_s < 5 and response.info["attempts"] == 2
    waits = [r for r in caplog.records if "waiting" in r.getMessage()]
    assert waits and waits[0].levelno == logging.INFO
    message = waits[0].getMessage()
    assert (
        endpoint.base_url in message
        and "HTTP 429" in message
        and "Retry-After 86400 s (capped at 0.3 s)" in message
    )


def test_an_endpoint_that_is_down_is_a_clear_error_naming_it_and_the_last_status():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    model = OpenAIChatModel(model="m", base_url=url, max_retries=1, max_consecutive_failures=3)
    model.settings.backoff_base = 0.01
    with pytest.raises(EndpointDown) as caught:
        model.generate([_request(f"q{i}") for i in range(5)])
    message = str(caught.value)
    assert url in message and "3 requests in a row failed" in message and "APIConnectionError" in message
    assert "run the same command again" in message
    with pytest.raises(EndpointDown):  # once down, later requests fail at once
        model.generate([_request("later")])

    with FakeOpenAIServer(faults=[Fault("404", times=100)]) as endpoint:  # refuses every request
        model = OpenAIChatModel(model="m", base_url=endpoint.base_url, max_consecutive_failures=4)
        with pytest.raises(EndpointDown, match="last status: HTTP 404"):
            model.generate([_request(f"q{i}") for i in range(6)])
    assert len(endpoint.requests) <= 6  # a 404 is not retried


def _sample(task: str, episode: int, shots: int) -> SampleRecord:
    return SampleRecord(
        task=task, episode=episode, episode_id=None, shots=shots, metadata={}, request_key=None, messages=None,
        gen_kwargs=None, response="x", error=None, prediction="x", target="x", parse_failure=False, scores={},
        audio_seconds=0.0, latency_s=0.0, cached=False,
    )  # fmt: skip


def test_sample_files_written_in_completion_order_merge_in_episode_order(tmp_path):
    for rank, records in enumerate([[(3, 1), (0, 0), (2, 0)], [(1, 1), (1, 0)]]):
        log = SampleLog(tmp_path, "t", rank)
        log.write([_sample("t", e, k) for e, k in records])
        log.close()
    merged = SampleLog.merge(tmp_path, "t", 2)
    lines = [json.loads(line) for line in merged.read_text().splitlines()]
    assert [(r["episode"], r["shots"]) for r in lines] == [(0, 0), (1, 0), (1, 1), (2, 0), (3, 1)]
    assert not list(tmp_path.glob("*.partial.jsonl"))

    SampleLog(tmp_path, "u", 0).close()
    with pytest.raises(UsageError, match="filesystem they all share"):
        SampleLog.merge(tmp_path, "u", 2)


def test_a_clips_identity_is_what_earlier_versions_computed():
    """Content keys hash each clip's PCM16 bytes: a faster conversion must round exactly as before (half to
    even, clipped), or every cached response would be orphaned and every sample id would change."""
    import hashlib

    import numpy as np

    from audioeval.audio.wav import encode_wav
    from audioeval.types import AudioClip

    x = np.concatenate(
        [0.3 * np.sin(np.arange(16000) / 7.0), (np.arange(-6, 7) + 0.5) / 32767, [1.5, -2.0, 1, -1]]
    )
    assert (
        AudioClip.from_array(x, 16000).sha256
        == "bf92159a8c64d94a8478766da42a13056690234138969aa004c581d3623a5785"
    )
    assert AudioClip(x, 16000).sha256 == "557604b7008761154d655bcb246ec5867838c59b029bfc0100f4aaf307838808"
    wav = encode_wav(x, 16000)
    assert (
        hashlib.sha256(wav).hexdigest() == "b5ef0c13b5e70e6c91ef200b89da182f4926cdb248df03355eb9c55815e2f16f"
    )


def test_a_requests_content_key_is_what_earlier_versions_computed():
    """The response cache keys on it: the same request (text, audio, settings, label space) for the same model
    must give the same key from one version to the next, for each model asking (the run's and a reference)."""
    import numpy as np

    from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart

    clip = AudioClip.from_array(0.3 * np.sin(np.arange(1600) / 5.0), 16000)
    messages = (
        Message("system", (TextPart("be brief \u00e9 \U0001f3b5"),)),
        Message("user", (TextPart('[Demo 1] "x"\n'), AudioPart(clip), TextPart(" Label:"))),
    )
    settings = {"max_new_tokens": 5, "until": ["\n"], "temperature": 0.0, "extra_body.x": {"b": 1, "a": None}}
    request = Request(messages, settings, RequestId("t", 1, 0), choices=("1", "2"))
    model = {"model": "openai", "endpoint_model": "m", "base_url": None, "defaults": {}}
    assert request.content_key(model) == "74854a3ebd21f68f737f04a65399bc25ae37af248376ac2215c59f595ceae968"
    assert (
        request.content_key({"model": "shortcut", "version": 3})
        == "8eebf567dc18d6d582a1c94d1c46f8f9e75a8bf67b12eb0e87aa4df366e40a91"
    )
    assert request.content_key(model) == request.content_key(dict(model))  # asked again: the same
