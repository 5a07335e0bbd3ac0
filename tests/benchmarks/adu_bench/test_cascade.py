"""Cascade models (ASR stage + text stage), the offline pocketsphinx ASR and the hf-chat text backend."""

from __future__ import annotations

import json
from pathlib import Path

import jiwer
import numpy as np
import pytest
from adu_helpers import is_judge, judge_reply
from scipy.signal import resample_poly

from audioeval.audio.speech import synthesize
from audioeval.errors import ModelError
from audioeval.models.registry import create_model
from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text
from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId, ShownEpisode, TextPart

SENTENCES = [
    "please tell me the weather today",
    "what is the capital of france",
    "i would like a cup of coffee",
    "can you help me find a good restaurant",
]


def speech(text: str) -> AudioClip:
    return AudioClip.from_array(synthesize(text, language="en-us", variant="f5", rate=170), 16000)


def request(*parts, shown=None) -> Request:
    return Request(
        messages=(Message("user", tuple(parts)),),
        gen_kwargs={"max_new_tokens": 8},
        rid=RequestId("t", 0, 0),
        shown=shown,
    )


@pytest.fixture(scope="module")
def sphinx():
    return create_model("pocketsphinx", {}, batch_size=1, seed=0)


@pytest.mark.slow
def test_pocketsphinx_transcribes_clear_espeak_speech(sphinx):
    hypotheses = [sphinx.transcribe(speech(s)) for s in SENTENCES]
    assert jiwer.wer(SENTENCES, hypotheses) < 0.5
    # other sampling rates are resampled to 16 kHz first: the same speech at 24 kHz reads about as well
    at_24k = [AudioClip.from_array(resample_poly(speech(s).samples, 3, 2), 24000) for s in SENTENCES]
    assert jiwer.wer(SENTENCES, [sphinx.transcribe(c) for c in at_24k]) < 0.5


def test_pocketsphinx_model_answers_with_the_query_transcript(sphinx):
    demo, query = speech("i would like a cup of coffee"), speech("please tell me the weather today")
    episode = {"query": {"clips": [{"role": "question", "audio": query}]}}
    (response,) = sphinx.generate(
        [
            request(
                AudioPart(demo), TextPart(" then "), AudioPart(query), shown=ShownEpisode.of(episode, 0, None)
            )
        ]
    )
    assert jiwer.wer("please tell me the weather today", response.text) < jiwer.wer(
        "i would like a cup of coffee", response.text
    )
    assert "coffee" not in response.text
    (empty,) = sphinx.generate([request(TextPart("no audio here"))])
    assert empty.text is None and "no audio" in empty.error
    assert sphinx.identity["model"] == "pocketsphinx" and len(sphinx.identity["hmm"]) == 16


def test_cascade_arguments_are_checked_per_stage():
    with pytest.raises(ModelError, match="needs llm="):
        create_model("cascade", {"asr": "pocketsphinx"}, 1, 0)
    with pytest.raises(ModelError, match=r"llm stage 'openai'.*base_urll.*base_url"):
        create_model("cascade", {"llm": "openai", "llm_model": "x", "base_urll": "http://x"}, 1, 0)
    with pytest.raises(ModelError, match=r"asr stage 'pocketsphinx'.*asr_KEY.*'beam'"):
        create_model("cascade", {"llm": "openai", "llm_model": "x", "asr_beam": 3}, 1, 0)
    with pytest.raises(ModelError, match=r"\{text\} exactly once"):
        create_model("cascade", {"llm": "openai", "llm_model": "x", "transcript_format": "[heard]"}, 1, 0)
    with pytest.raises(ModelError, match="cannot itself be a cascade"):
        create_model("cascade", {"llm": "cascade"}, 1, 0)


def test_an_audio_language_model_can_be_the_asr_stage_and_transcripts_are_reused():
    def reply(body):
        text = prompt_text(body)
        return "  hello   world " if "Transcribe the speech" in text else f"LLM saw: {text}"

    with FakeOpenAIServer(reply=reply) as server:
        model = create_model(
            "cascade",
            {"asr": "openai", "asr_model": "asr-lalm", "asr_base_url": server.base_url, "llm": "openai",
             "llm_model": "text-llm", "base_url": server.base_url},
            1, 0,
        )  # fmt: skip
        clip = speech("hello world")
        req = Request(
            messages=(
                Message("system", (TextPart("Be kind."),)),
                Message("user", (TextPart("Q: "), AudioPart(clip), TextPart(" ?"))),
            ),
            gen_kwargs={"max_new_tokens": 8},
            rid=RequestId("t", 0, 0),
        )
        first, second = model.generate([req]), model.generate([req])
        bodies = [r for r in server.requests]
    assert [b["model"] for b in bodies] == [
        "asr-lalm",
        "text-llm",
        "text-llm",
    ]  # the clip is transcribed once
    llm_messages = bodies[1]["messages"]
    assert llm_messages[0] == {"role": "system", "content": "Be kind."}
    assert llm_messages[1]["content"] == [{"type": "text", "text": 'Q: [Audio transcript: "hello world"] ?'}]
    assert first[0].text == second[0].text and first[0].info["transcripts"] == ["hello world"]
    identity = model.identity
    assert identity["asr"]["endpoint_model"] == "asr-lalm" and identity["llm"]["endpoint_model"] == "text-llm"


@pytest.mark.slow
def test_offline_cascade_with_an_openai_text_stage_end_to_end(tmp_path: Path):
    def reply(body):
        if is_judge(body):
            return "6"
        return "Answer to: " + prompt_text(body).split("\n")[-2]

    with FakeOpenAIServer(reply=reply) as server:
        args = {"asr": "pocketsphinx", "llm": "openai", "llm_model": "text-llm", "base_url": server.base_url}

        def go(model_args):
            return run_evaluation(
                RunConfig(tasks="adu_general", model="cascade", model_args=model_args, limit="2",
                          output_path=str(tmp_path / "out"), log_samples=True, cache_dir=str(tmp_path / "cache"),
                          judge=["openai"], judge_args=[{"model": "judge", "base_url": server.base_url}],
                          show_progress=False, bootstrap_resamples=50)
            )  # fmt: skip

        out = go(args)
        lalm_requests = [r for r in server.requests if not is_judge(r)]
        assert len(lalm_requests) == 2
        for body in lalm_requests:  # the text stage sees transcripts, never audio
            assert all(
                p["type"] == "text"
                for m in body["messages"]
                if isinstance(m["content"], list)
                for p in m["content"]
            )
            assert '[Audio transcript: "' in prompt_text(body)
        records = [json.loads(line) for line in (Path(out["run_dir"]) / "samples_adu_general.jsonl").open()]
        assert all(
            r["response_info"]["transcripts"][0] and r["response"].startswith("Answer to:") for r in records
        )
        assert out["results"]["adu_general"]["0-shot"]["score"] == 6.0
        assert out["model"]["identity"]["asr"]["model"] == "pocketsphinx"
        before = len(server.requests)
        go(args)  # same stages: everything cached
        assert len(server.requests) == before
        go(
            {**args, "transcript_format": "<heard>{text}</heard>"}
        )  # the text stage sees other text: new requests
        assert len([r for r in server.requests[before:] if not is_judge(r)]) == 2


@pytest.mark.slow
def test_hf_chat_batches_with_left_padding_like_single_requests(tiny_lm: Path):
    model = create_model("hf-chat", {"pretrained": str(tiny_lm)}, batch_size=3, seed=0)
    texts = ["hello", "what is the capital of japan and why is the sky blue today", "x"]
    requests = [request(TextPart(t)) for t in texts]
    assert model.render_prompt(requests[0]).endswith(
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    )
    batched = [r.text for r in model.generate(requests)]
    single = [model.generate([r])[0].text for r in requests]
    assert batched == single and all(isinstance(t, str) for t in batched)
    with pytest.raises(ModelError, match="text-only.*--model cascade"):
        model.generate([request(AudioPart(AudioClip.from_array(np.zeros(1600), 16000)))])
    assert model.identity["fingerprint"] and model.identity["dtype"] == "float32"


@pytest.mark.slow
def test_offline_cascade_with_a_local_causal_lm_end_to_end(tmp_path: Path, tiny_lm: Path):
    with FakeOpenAIServer(reply=judge_reply("5", "5")) as server:
        out = run_evaluation(
            RunConfig(tasks="adu_skill", model="cascade",
                      model_args={"asr": "pocketsphinx", "llm": "hf", "pretrained": str(tiny_lm)},
                      gen_kwargs={"max_new_tokens": 6}, limit="2", output_path=str(tmp_path / "out"), log_samples=True,
                      cache_dir=str(tmp_path / "cache"), judge=["openai"],
                      judge_args=[{"model": "judge", "base_url": server.base_url}], show_progress=False,
                      bootstrap_resamples=50)
        )  # fmt: skip
    records = [json.loads(line) for line in (Path(out["run_dir"]) / "samples_adu_skill.jsonl").open()]
    assert len(records) == 2 and all(r["error"] is None for r in records)
    assert all(r["response_info"]["transcripts"][0] for r in records)
    metrics = out["results"]["adu_skill"]["0-shot"]
    n_empty = sum(not r["response"].strip() for r in records)
    assert metrics["empty_response_rate"] == n_empty / 2
    assert metrics["score"] == pytest.approx(5.0 * (2 - n_empty) / 2)
    assert out["model"]["identity"]["llm"]["model"] == "hf-chat"


def test_resampling_keeps_pocketsphinx_input_at_16k(sphinx):
    from audioeval.models.pocketsphinx_asr import PAD_SECONDS, to_16k_pcm

    clip = AudioClip.from_array(resample_poly(speech("hello").samples, 3, 2), 24000)  # 1.5x the samples
    pcm = np.frombuffer(to_16k_pcm(clip), dtype="<i2")
    assert abs(len(pcm) - (len(speech("hello").samples) + 2 * PAD_SECONDS * 16000)) <= 2
