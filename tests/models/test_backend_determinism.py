"""Stateful backends give the same answer for the same request whatever was asked before it, in which batch,
and in how many processes: pocketsphinx (its front end adapts between utterances), eSpeak NG speech (global
synthesis state) and the cascade built on them."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from audioeval.audio import speech
from audioeval.models.registry import create_model
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text
from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, TextPart
from tests.conftest import latest_run, load_samples

# Two built-in ALICE ASR clips: before the fix a decoder that had heard SOUP heard MUSEUM as "you see and i'm"
# instead of "the museum and i'm".
SOUP = (
    "The soup needs a little more salt.",
    {"variant": "f3", "pitch": 51, "pitch_range": 49, "rate": 164, "volume": 106},
)
MUSEUM = (
    "The museum opens at nine tomorrow.",
    {"variant": "m2", "pitch": 46, "pitch_range": 43, "rate": 168},
)


def clip(utterance: tuple[str, dict]) -> AudioClip:
    text, voice = utterance
    return AudioClip.from_array(speech.synthesize(text, **voice), 16000)


@pytest.fixture(scope="module")
def clips() -> tuple[AudioClip, AudioClip]:
    return clip(SOUP), clip(MUSEUM)


def sphinx():
    return create_model("pocketsphinx", {}, batch_size=1, seed=0)


@pytest.mark.slow
def test_pocketsphinx_transcript_does_not_depend_on_what_was_decoded_before(clips):
    soup, museum = clips
    alone = sphinx().transcribe(museum), sphinx().transcribe(soup)
    a_then_b = sphinx()
    first = a_then_b.transcribe(soup), a_then_b.transcribe(museum)
    b_then_a = sphinx()
    second = b_then_a.transcribe(museum), b_then_a.transcribe(soup)
    assert (first[1], first[0]) == alone == second
    assert "museum" in alone[0]


@pytest.mark.slow
def test_pocketsphinx_requests_in_any_batch_and_order_get_the_same_transcripts(clips):
    requests = [
        Request(messages=(Message("user", (AudioPart(c),)),), gen_kwargs={}, rid=RequestId("asr", 0, i))
        for i, c in enumerate(clips * 2)
    ]
    together = [r.text for r in sphinx().generate(requests)]
    reversed_ = [r.text for r in sphinx().generate(requests[::-1])][::-1]
    one_by_one = [sphinx().generate([r])[0].text for r in requests]
    assert together == reversed_ == one_by_one
    assert together[:2] == together[2:]


@pytest.mark.slow
def test_cascade_answers_do_not_depend_on_request_order(clips):
    def reply(body):
        return "LLM saw: " + prompt_text(body)

    def ask(model, order):
        reqs = [
            Request(
                messages=(Message("user", (TextPart("Q: "), AudioPart(clips[i]))),),
                gen_kwargs={"max_new_tokens": 8},
                rid=RequestId("t", 0, i),
            )
            for i in order
        ]
        return {i: r.text for i, r in zip(order, model.generate(reqs), strict=True)}

    with FakeOpenAIServer(reply=reply) as server:
        args = {"asr": "pocketsphinx", "llm": "openai", "llm_model": "text-llm", "base_url": server.base_url}
        forward = ask(create_model("cascade", args, 1, 0), [0, 1])
        backward = ask(create_model("cascade", args, 1, 0), [1, 0])
        separate = {
            **ask(create_model("cascade", args, 1, 0), [1]),
            **ask(create_model("cascade", args, 1, 0), [0]),
        }
    assert forward == backward == separate
    assert "museum" in forward[1]


def test_espeak_speech_does_not_depend_on_what_was_spoken_before():
    params = {"rate": 160, "pitch": 50, "range": 50, "volume": 100, "wordgap": 0}
    first, second = speech._Engine(), speech._Engine()
    try:
        a_then_b = (
            first.synth("seven", "en+f2", params, False),
            first.synth("go home now", "en+m1", params, False),
        )
        b_then_a = (
            second.synth("go home now", "en+m1", params, False),
            second.synth("seven", "en+f2", params, False),
        )
    finally:
        first.close()
        second.close()
    assert np.array_equal(a_then_b[0], b_then_a[1]) and np.array_equal(a_then_b[1], b_then_a[0])


@pytest.mark.slow
def test_pocketsphinx_on_an_asr_task_gives_the_same_transcripts_in_one_and_two_processes(tmp_path):
    common = ["--tasks", "alice_s1_asr_ceq", "--model", "pocketsphinx", "--num_fewshot", "0", "--limit", "16",
              "--no_cache", "--log_samples"]  # fmt: skip
    env = {**os.environ, "ACCELERATE_DISABLE_RICH": "1"}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "audioeval"]  # fmt: skip
    for name, cmd in (("one", [sys.executable, "-m", "audioeval"]), ("two", launch)):
        proc = subprocess.run(
            [*cmd, *common, "--output_path", str(tmp_path / name)],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    one, two = (load_samples(latest_run(tmp_path / n), "alice_s1_asr_ceq") for n in ("one", "two"))
    assert len(one) == 16
    assert {r["episode"]: r["response"] for r in one} == {r["episode"]: r["response"] for r in two}
