"""`--model openai` answering in speech: what the request asks for, both reply shapes (OpenAI's and
vLLM-Omni's two choices), and every way the audio can be missing or broken."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from audioeval.audio.wav import encode_wav
from audioeval.models.speech.audio_reply import parse_audio_reply
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from tests.conftest import latest_run, load_results, load_samples, run_cli, toy_answer
from tests.speech.speech_helpers import toy_run_args


def _run(tmp_path, server, name: str, model_args: str = "", *extra: str, task: str = "toy_tones"):
    args = f"model=gpt-audio,base_url={server.base_url},audio_output=true,max_retries=1{model_args}"
    asr = ["--asr", "openai", "--asr_args", f"model=whisper-test,base_url={server.base_url}"]
    code, _out, err = run_cli(
        [
            *toy_run_args(tmp_path / name, tmp_path / f"c-{name}", "openai", args, *asr, *extra, task=task),
            "--limit",
            "3",
        ]
    )
    return code, err


@pytest.fixture
def server():
    with FakeOpenAIServer(reply=toy_answer) as s:
        s.transcribe = s.hear_own_audio
        yield s


@pytest.mark.slow
def test_the_request_asks_for_text_and_audio_and_demos_stay_text_turns(tmp_path, server):
    code, err = _run(tmp_path, server, "req", ",voice=verse,audio_format=pcm16", task="toy_tones_chat")
    assert code == 0, err
    chat = [r for r in server.requests if "messages" in r]
    assert chat and all(r["modalities"] == ["text", "audio"] for r in chat)
    assert all(r["audio"] == {"voice": "verse", "format": "pcm16"} for r in chat)
    assistant = [m for r in chat for m in r["messages"] if m["role"] == "assistant"]
    assert assistant and all(isinstance(m["content"], str) and "audio" not in m for m in assistant)
    identity = load_results(latest_run(tmp_path / "req"))["model"]["identity"]
    assert identity["audio_output"] == {"voice": "verse", "format": "pcm16"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape, audio_format", [("openai", "wav"), ("openai", "pcm16"), ("vllm-omni", "wav")]
)
def test_both_reply_shapes_become_spoken_answers(tmp_path, server, shape, audio_format):
    server.audio_shape = shape
    code, err = _run(tmp_path, server, shape, f",audio_format={audio_format}")
    assert code == 0, err
    samples = load_samples(latest_run(tmp_path / shape), "toy_tones")
    for s in samples:
        spoken = s["spoken"]
        assert spoken["transcript"] in ("low", "high") and spoken["asr_text"] == spoken["transcript"]
        assert s["response"] == spoken["transcript"] and s["scores"]["spoken_text_wer"] == 0.0
        assert spoken["audio"]["sampling_rate"] == 24000 and spoken["audio"]["seconds"] == pytest.approx(0.35)
        assert spoken["time_to_first_audio_s"] is None and spoken["generation_s"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["no_audio", "bad_audio", "truncated_audio", "unknown_audio"])
def test_broken_audio_is_retried(tmp_path, server, kind):
    server.faults.append(Fault(kind, times=1))
    code, err = _run(tmp_path, server, kind)
    assert code == 0, err
    samples = load_samples(latest_run(tmp_path / kind), "toy_tones")
    assert all(s["error"] is None for s in samples)
    assert sum((s.get("response_info") or {}).get("attempts", 1) == 2 for s in samples) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, reason",
    [
        ("no_audio", "the reply holds none"),
        ("bad_audio", "not base64"),
        ("truncated_audio", "truncated WAV audio"),
        ("unknown_audio", "unknown format"),
    ],
)
def test_audio_that_stays_broken_is_a_counted_failure_with_its_reason(tmp_path, server, kind, reason):
    server.faults.append(Fault(kind, times=1000))
    code, err = _run(tmp_path, server, kind)
    run = latest_run(tmp_path / kind)
    samples = load_samples(run, "toy_tones")
    assert samples and all(
        "malformed reply after 2 attempt(s)" in s["error"] and reason in s["error"] for s in samples
    )
    assert load_results(run)["timing"]["endpoints"]["model"]["failed"] == len(samples)
    assert code == 3, err


def test_the_vllm_omni_text_choice_is_the_transcript():
    wav = encode_wav(np.zeros(2400, dtype=np.float32), 24000)
    reply = {
        "choices": [
            {"message": {"role": "assistant", "content": "Paris."}},
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "audio": {"data": base64.b64encode(wav).decode(), "transcript": ""},
                }
            },
        ]
    }
    answer = parse_audio_reply(reply, "wav")
    assert (answer.text, answer.transcript, answer.clip.sampling_rate, answer.clip.seconds) == (
        "Paris.",
        "Paris.",
        24000,
        0.1,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "model_args, message",
    [
        ("model=m,voice=alloy", "add audio_output=true"),
        (
            "model=m,audio_output=true,audio_format=mp3",
            "audio_format=mp3: model 'openai' must be one of: wav, pcm16",
        ),
    ],
)
def test_bad_audio_arguments_are_one_clear_line(tmp_path, model_args, message):
    code, _out, err = run_cli(
        toy_run_args(tmp_path / "o", tmp_path / "c", "openai", model_args + ",base_url=http://127.0.0.1:9/v1")
    )
    assert code == 2 and message in err and "Traceback" not in err, err
