"""Damaged rows in the response cache (not damaged pages: those are test_core_hardening's): a row another
program edited or half wrote is a miss, asked again and replaced, with one warning for the run; never a
traceback, never a wrong answer taken from it."""

from __future__ import annotations

import json
import logging
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest

from audioeval.run.cache import SPOKEN_KEY, CacheEntry, ResponseCache
from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.types import AudioClip, SpokenAnswer
from tests.conftest import TOY, latest_run, load_samples, run_cli, toy_answer


def _spoken(seed: int) -> SpokenAnswer:
    samples = np.random.default_rng(seed).uniform(-0.5, 0.5, 2400).astype(np.float32)
    return SpokenAnswer(AudioClip.from_array(samples, 24000), "hello", 0.1, 0.3)


def _wav_header(rate: int, frames: int) -> bytes:
    """A 16-bit mono WAV header announcing `frames` frames at `rate` Hz, followed by one frame."""
    data = b"\x00\x00"
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", frames * 2) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def _damage(path: Path, key: str, response: object = None, info: object = None) -> None:
    with sqlite3.connect(path) as db:
        if response is not None:
            db.execute("UPDATE responses SET response = ? WHERE key = ?", (response, key))
        if info is not None:
            db.execute("UPDATE responses SET info = ? WHERE key = ?", (info, key))


SPOKEN = _spoken(0)
DESCRIBED = {
    "audio": SPOKEN.audio.sha256,
    "transcript": "hello",
    "time_to_first_audio_s": 0.1,
    "generation_s": 0.3,
}


@pytest.mark.parametrize(
    ("response", "info", "blob"),
    [
        (None, "{not json", None),
        (None, "[1, 2]", None),
        (None, "null", None),
        (None, "[" * 100_000 + "]" * 100_000, None),  # too deep for the JSON reader
        (None, json.dumps({SPOKEN_KEY: "said aloud"}), None),
        (None, json.dumps({SPOKEN_KEY: {**DESCRIBED, "audio": 7}}), None),
        (None, json.dumps({SPOKEN_KEY: {**DESCRIBED, "transcript": ["hello"]}}), None),
        (None, json.dumps({SPOKEN_KEY: {**DESCRIBED, "generation_s": "slow"}}), None),
        (b"\x00binary", None, None),  # a BLOB where the text goes
        (None, None, _wav_header(0, 1)),  # the audio declares 0 Hz
        (None, None, _wav_header(4_000_000_000 // 2, 1)),
        (None, None, _wav_header(24000, 10**6)),  # more frames announced than held
    ],
    ids=[
        "info-not-json", "info-a-list", "info-null", "info-too-deep", "spoken-a-string", "spoken-audio-a-number",
        "spoken-transcript-a-list", "spoken-timing-a-string", "response-a-blob",
        "blob-0-hz", "blob-huge-rate", "blob-short",
    ],
)  # fmt: skip
def test_a_damaged_row_is_a_miss_with_one_warning(tmp_path: Path, caplog, response, info, blob):
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put_many(
        [
            CacheEntry("spoken", "generate", "hello", {"attempts": 1}, SPOKEN),
            CacheEntry("spoken2", "generate", "hello", {}, SPOKEN),
            CacheEntry("fine", "generate", "kept", {"attempts": 1}),
        ]
    )
    _damage(path, "spoken", response, info)
    _damage(path, "spoken2", response, info)
    if blob is not None:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE blobs SET data = ? WHERE sha256 = ?", (blob, SPOKEN.audio.sha256))
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        found = cache.get_many(["spoken", "spoken2", "fine"])
        found_again = cache.get_many(["spoken", "fine"])
    assert set(found) == {"fine"} and set(found_again) == {"fine"} and found["fine"].text == "kept"
    warnings = [r.getMessage() for r in caplog.records]
    if blob is None:  # a row of the wrong shape is said once; a missing or damaged blob is a plain miss
        assert len(warnings) == 1 and "holds rows that are not valid responses" in warnings[0], warnings
        assert str(path) in warnings[0]
    else:
        assert warnings == []
    # asked again, the answer replaces the damaged row
    cache.put_many([CacheEntry("spoken", "generate", "again", {}, _spoken(1))])
    assert cache.get_many(["spoken"])["spoken"].text == "again"
    cache.close()


def test_a_run_over_damaged_rows_asks_them_again_and_scores_as_before(tmp_path: Path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    with FakeOpenAIServer(reply=toy_answer) as server:
        args = [
            "--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "2", "--no_progress",
            "--model", "openai", "--model_args", f"model=m,base_url={server.base_url},max_retries=0",
            "--cache_dir", str(cache), "--output_path", str(out), "--log_samples", "--bootstrap_iters", "10",
        ]  # fmt: skip
        code, _, err = run_cli(args)
        assert code == 0, err
        before = load_samples(latest_run(out), "toy_tones")
        asked = len(server.requests)
        with sqlite3.connect(cache / "responses.sqlite") as db:
            keys = [k for (k,) in db.execute("SELECT key FROM responses ORDER BY key LIMIT 3")]
            db.execute("UPDATE responses SET info = '{oops' WHERE key = ?", (keys[0],))
            db.execute(
                "UPDATE responses SET info = ? WHERE key = ?", (json.dumps({SPOKEN_KEY: "x"}), keys[1])
            )
            db.execute("UPDATE responses SET response = ? WHERE key = ?", (b"\xff", keys[2]))
        code, _, err = run_cli(args)
        assert code == 0 and "Traceback" not in err, err
        assert len(server.requests) == asked + 3  # the three damaged rows were asked again, nothing else
        assert err.count("holds rows that are not valid responses") == 1
        assert load_samples(latest_run(out), "toy_tones") == before
        code, _, err = run_cli(args)  # the rows were replaced: nothing to say, nothing to ask
        assert code == 0 and "not valid responses" not in err and len(server.requests) == asked + 3
