"""Spoken answers in the response cache: the audio is a content-addressed blob, a response without its blob
is a miss, and a run killed mid-way resumes asking only what it had not stored."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time

import numpy as np
import pytest

from audioeval.run.cache import CacheEntry, NoCache, ResponseCache
from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.types import AudioClip, SpokenAnswer
from tests.conftest import latest_run, load_results, load_samples, toy_answer
from tests.speech.speech_helpers import audioeval_command, subprocess_env, toy_run_args


def _spoken(seed: int) -> SpokenAnswer:
    samples = np.random.default_rng(seed).uniform(-0.5, 0.5, 2400).astype(np.float32)
    return SpokenAnswer(AudioClip.from_array(samples, 24000), "hello", 0.1, 0.3)


def test_a_spoken_answer_comes_back_with_its_audio_and_timing(tmp_path):
    cache = ResponseCache(tmp_path / "r.sqlite")
    spoken = _spoken(0)
    cache.put_many([CacheEntry("k", "generate", "hello", {"attempts": 2}, spoken)])
    got = cache.get_many(["k"])["k"]
    assert got.text == "hello" and got.info == {"attempts": 2}
    assert got.spoken is not None and got.spoken.audio.sha256 == spoken.audio.sha256
    assert np.array_equal(got.spoken.audio.samples, spoken.audio.samples)
    assert (got.spoken.transcript, got.spoken.time_to_first_audio_s, got.spoken.generation_s) == (
        "hello",
        0.1,
        0.3,
    )
    cache.close()


def test_two_answers_with_the_same_audio_share_one_blob(tmp_path):
    cache = ResponseCache(tmp_path / "r.sqlite")
    cache.put_many(
        [CacheEntry("a", "generate", "x", {}, _spoken(1)), CacheEntry("b", "generate", "y", {}, _spoken(1))]
    )
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 1
    assert set(cache.get_many(["a", "b"])) == {"a", "b"}
    cache.close()


def test_a_missing_or_damaged_blob_is_a_miss(tmp_path):
    path = tmp_path / "r.sqlite"
    cache = ResponseCache(path)
    cache.put_many(
        [
            CacheEntry("gone", "generate", "x", {}, _spoken(2)),
            CacheEntry("bad", "generate", "y", {}, _spoken(3)),
        ]
    )
    cache.put_many([CacheEntry("text", "generate", "z")])
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM blobs WHERE sha256 = ?", (_spoken(2).audio.sha256,))
        db.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (b"RIFF....", _spoken(3).audio.sha256))
    assert set(cache.get_many(["gone", "bad", "text"])) == {"text"}
    cache.close()


def test_the_in_memory_store_keeps_the_audio_too():
    store = NoCache()
    store.put_many([CacheEntry("k", "generate", "x", {}, _spoken(4))])
    assert store.get_many(["k"])["k"].spoken is not None


def _wait_for(server: FakeOpenAIServer, count: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while len(server.requests) < count:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.time() < deadline, "the run did not reach the expected number of requests"
        time.sleep(0.05)


def _generated(cache_file) -> int:
    with sqlite3.connect(cache_file) as db:
        return db.execute("SELECT COUNT(*) FROM responses WHERE kind = 'generate'").fetchone()[0]


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_asks_only_the_unanswered_requests(tmp_path):
    cache = tmp_path / "cache"
    with FakeOpenAIServer(reply=toy_answer, delay=0.05) as server:
        args = f"text_model=openai,model=toy-remote,base_url={server.base_url},num_concurrent=1"
        env = subprocess_env()
        killed = subprocess.Popen(
            audioeval_command(toy_run_args(tmp_path / "killed", cache, "tts", args, "--asr", "none", "--spoken_text", "transcript")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        _wait_for(server, 10, killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        stored = _generated(cache / "responses.sqlite")
        asked_before = len(server.requests)
        assert 0 < stored < 36
        resumed = subprocess.run(
            audioeval_command(toy_run_args(tmp_path / "resumed", cache, "tts", args, "--asr", "none", "--spoken_text", "transcript")),
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        total = _generated(cache / "responses.sqlite")
        assert len(server.requests) - asked_before == total - stored
        again = subprocess.run(
            audioeval_command(toy_run_args(tmp_path / "again", cache, "tts", args, "--asr", "none", "--spoken_text", "transcript")),
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.requests) - asked_before == total - stored  # a complete run asks nothing more
    resumed_dir, again_dir = latest_run(tmp_path / "resumed"), latest_run(tmp_path / "again")
    assert load_results(resumed_dir)["results"] == load_results(again_dir)["results"]
    assert load_samples(resumed_dir, "toy_tones") == load_samples(again_dir, "toy_tones")
