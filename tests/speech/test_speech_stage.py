"""The speech stage end to end on the toy task: a `tts` model over a fake endpoint answers in speech, a fake
`/audio/transcriptions` endpoint hears it, and the run scores the text `--spoken_text` names."""

from __future__ import annotations

import hashlib

import pytest

from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from tests.conftest import latest_run, load_results, load_samples, run_cli, toy_answer
from tests.speech.speech_helpers import toy_run_args

TIMED = ("spoken_time_to_first_audio_s", "spoken_real_time_factor")


def heard(wav: bytes, fields: dict[str, str]) -> str:
    """A fake ASR: low or high from the audio's bytes, often not what was said."""
    return "HIGH." if hashlib.sha256(wav).digest()[0] % 2 else "low"


def _run(tmp_path, server, name: str, *extra: str, text_args: str = "num_concurrent=4"):
    model_args = f"text_model=openai,model=toy-remote,base_url={server.base_url},{text_args}"
    asr = ["--asr", "openai", "--asr_args", f"model=whisper-test,base_url={server.base_url}"]
    args = toy_run_args(tmp_path / name, tmp_path / f"cache-{name}", "tts", model_args, *asr, *extra)
    code, _out, err = run_cli([*args, "--limit", "4"])
    return code, err


@pytest.fixture
def server():
    with FakeOpenAIServer(reply=toy_answer, transcribe=heard) as s:
        yield s


@pytest.mark.slow
def test_the_asr_text_is_scored_by_default_sample_by_sample(tmp_path, server):
    code, err = _run(tmp_path, server, "asr")
    assert code == 0, err
    samples = load_samples(latest_run(tmp_path / "asr"), "toy_tones")
    assert samples and all(s["spoken"]["scored"] == "asr" for s in samples)
    for s in samples:
        assert s["response"] == s["spoken"]["asr_text"] == s["prediction"]
        assert s["scores"]["accuracy"] == float(s["prediction"] == s["target"])
        assert s["spoken"]["transcript"] in ("low", "high") and s["spoken"]["asr"] == "openai"
    assert any(s["spoken"]["asr_text"].lower().strip(".") != s["spoken"]["transcript"] for s in samples)
    assert all(f.get("model") == "whisper-test" for f in server.transcriptions)


@pytest.mark.slow
def test_the_models_transcript_is_scored_when_asked(tmp_path, server):
    code, err = _run(tmp_path, server, "tr", "--spoken_text", "transcript")
    assert code == 0, err
    run = latest_run(tmp_path / "tr")
    for s in load_samples(run, "toy_tones"):
        assert s["response"] == s["spoken"]["transcript"] and s["prediction"] == s["spoken"]["transcript"]
        assert s["scores"]["accuracy"] == float(s["spoken"]["transcript"] == s["target"])
    speech = load_results(run)["speech"]
    assert speech["asr"] == "openai" and speech["spoken_text"] == "transcript"
    assert speech["asr_identity"]["endpoint_model"] == "whisper-test"


@pytest.mark.slow
def test_spoken_metrics_sit_beside_the_tasks_own(tmp_path, server):
    code, err = _run(tmp_path, server, "m")
    assert code == 0, err
    run = latest_run(tmp_path / "m")
    block = load_results(run)["results"]["toy_tones"]["0-shot"]
    for name in ("accuracy", "spoken_text_wer", "spoken_seconds", *TIMED):
        assert block[name] is not None and f"{name}_ci95" in block
    for s in load_samples(run, "toy_tones"):
        said, asr = s["spoken"]["transcript"], s["spoken"]["asr_text"].lower().strip(".")
        assert s["scores"]["spoken_text_wer"] == (0.0 if said == asr else 1.0)  # "HIGH." is "high"
        assert s["scores"]["spoken_seconds"] == pytest.approx(s["spoken"]["audio"]["seconds"], abs=1e-3)
        assert (run / s["spoken"]["audio_file"]).is_file()


@pytest.mark.slow
def test_an_asr_that_fails_is_a_counted_failure_with_its_reason(tmp_path, server):
    server.transcription_faults.append(Fault("500", times=10_000))
    code, err = _run(tmp_path, server, "f", "--asr_args", f"model=w,base_url={server.base_url},max_retries=1")
    run = latest_run(tmp_path / "f")
    samples = load_samples(run, "toy_tones")
    assert all(
        s["response"] is None and "ASR openai failed" in s["error"] and "HTTP 500" in s["error"]
        for s in samples
    )
    results = load_results(run)
    assert results["results"]["toy_tones"]["0-shot"]["errors"] == 4
    assert results["timing"]["endpoints"]["asr openai"]["failed"] == len(server.transcriptions) // 2
    assert code == 3, err  # no sample could be scored


@pytest.mark.slow
def test_a_rerun_asks_the_asr_nothing_more(tmp_path, server):
    assert _run(tmp_path, server, "r")[0] == 0
    asked = len(server.transcriptions)
    assert asked > 0
    code, err = _run(tmp_path, server, "r")
    assert code == 0, err
    assert len(server.transcriptions) == asked


def _stable(run) -> tuple[dict, list[dict]]:
    results = load_results(run)["results"]
    for per_k in results.values():
        for block in per_k.values():
            for key in [k for k in block if k.startswith(TIMED)]:
                block.pop(key)
    samples = load_samples(run, "toy_tones")
    for s in samples:
        for key in TIMED:
            s["scores"].pop(key)
        for key in ("time_to_first_audio_s", "generation_s", "real_time_factor"):
            s["spoken"].pop(key)
    return results, samples


@pytest.mark.slow
def test_results_do_not_depend_on_the_requests_in_flight(tmp_path, server):
    assert _run(tmp_path, server, "one", text_args="num_concurrent=1")[0] == 0
    assert _run(tmp_path, server, "eight", text_args="num_concurrent=8")[0] == 0
    assert _stable(latest_run(tmp_path / "one")) == _stable(latest_run(tmp_path / "eight"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--asr", "whisperx"], "unknown ASR 'whisperx'"),
        (["--asr", "none"], "--spoken_text asr scores the ASR"),
        (["--asr", "openai", "--asr_args", "modle=x"], "--asr openai: --asr_args: unknown argument"),
    ],
)
def test_bad_speech_flags_are_one_clear_line(tmp_path, flags, message):
    args = toy_run_args(tmp_path / "o", tmp_path / "c", "tts", "text_model=chance", *flags)
    code, _out, err = run_cli(args)
    assert code == 2 and message in err and "Traceback" not in err, err
