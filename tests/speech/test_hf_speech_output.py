"""`--model hf --model_args audio_output=true`: a Qwen3-Omni checkpoint (a tiny random one with thinker, talker
and vocoder, built here) answers in text and 24 kHz speech through the whole run: spoken blocks, WAV files,
the cache, the identity. The weights are random, so this proves the path, not what is said."""

from __future__ import annotations

import subprocess
import wave

import pytest

from tests.conftest import latest_run, load_results, load_samples, run_cli
from tests.speech.speech_helpers import audioeval_command, subprocess_env, toy_run_args

pytest.importorskip("transformers")

# 30 talker steps at most: about 2.4 s of speech per answer, a fraction of a second to make on a CPU
SPEAKING = "audio_output=true,talker_max_new_tokens=30,max_new_tokens=6"
TRANSCRIPT = ("--asr", "none", "--spoken_text", "transcript")


@pytest.fixture(scope="module")
def omni(tmp_path_factory):
    from tests.support.tiny_omni import build_tiny_speaking_omni

    return build_tiny_speaking_omni(tmp_path_factory.mktemp("tiny_speaking_omni"))


def _args(
    tmp_path, name: str, checkpoint, model_args: str, *extra: str, cache: str | None = None
) -> list[str]:
    return toy_run_args(
        tmp_path / name, tmp_path / (cache or name), "hf", f"pretrained={checkpoint},{model_args}",
        *extra, "--limit", "2", "--bootstrap_iters", "0",
    )  # fmt: skip


def _run(tmp_path, name: str, checkpoint, model_args: str = SPEAKING, *extra: str, cache: str | None = None):
    spoken = TRANSCRIPT if "audio_output=true" in model_args else ()  # a text answer has no transcript
    code, _out, err = run_cli(_args(tmp_path, name, checkpoint, model_args, *spoken, *extra, cache=cache))
    assert code == 0, err
    return latest_run(tmp_path / name)


def _by_request(run_dir) -> dict[tuple[int, int], dict]:
    return {(s["episode"], s["shots"]): s for s in load_samples(run_dir, "toy_tones")}


@pytest.mark.slow
def test_the_command_line_run_scores_the_transcript_of_a_24khz_spoken_answer(tmp_path, omni):
    args = _args(tmp_path, "run", omni, SPEAKING, *TRANSCRIPT)
    done = subprocess.run(
        audioeval_command(args), capture_output=True, text=True, env=subprocess_env(), timeout=300
    )
    assert done.returncode == 0, done.stderr
    run_dir = latest_run(tmp_path / "run")
    results = load_results(run_dir)
    assert results["model"]["identity"]["audio_output"] == {"speaker": "ethan", "talker_max_new_tokens": 30}
    assert results["speech"]["spoken_text"] == "transcript" and results["speech"]["asr"] == "none"
    samples = load_samples(run_dir, "toy_tones")
    assert len(samples) == 2 * 3  # 2 episodes x k in (0, 1, 3)
    for s in samples:
        spoken = s["spoken"]
        assert s["error"] is None and isinstance(spoken["transcript"], str)
        assert s["response"] == spoken["transcript"] and spoken["scored"] == "transcript"
        with wave.open(str(run_dir / spoken["audio_file"])) as w:
            rate, frames = w.getframerate(), w.getnframes()
            samples_pcm = w.readframes(frames)
        assert rate == 24000 and spoken["audio"]["sampling_rate"] == 24000
        assert frames > 0 and spoken["audio"]["seconds"] == pytest.approx(frames / 24000, abs=1e-3)
        assert any(samples_pcm), "the waveform is silent on the 16-bit grid"
        assert spoken["generation_s"] > 0 and spoken["time_to_first_audio_s"] is None
        assert s["scores"]["spoken_seconds"] == pytest.approx(spoken["audio"]["seconds"], abs=1e-3)


@pytest.mark.slow
def test_the_text_is_the_thinkers_and_the_audio_does_not_depend_on_the_batch(tmp_path, omni):
    text_only = _by_request(_run(tmp_path, "text", omni, "max_new_tokens=6"))
    alone = _by_request(_run(tmp_path, "alone", omni))
    batched = _by_request(_run(tmp_path, "batched", omni, SPEAKING, "--batch_size", "4"))
    assert "spoken" not in next(iter(text_only.values()))
    assert {k: s["response"] for k, s in alone.items()} == {k: s["response"] for k, s in text_only.items()}
    heard = {k: (s["response"], s["spoken"]["audio"]["sha256"]) for k, s in alone.items()}
    assert heard == {k: (s["response"], s["spoken"]["audio"]["sha256"]) for k, s in batched.items()}


@pytest.mark.slow
def test_a_rerun_reads_the_spoken_answers_from_the_cache_and_a_new_speaker_asks_again(tmp_path, omni):
    first = _by_request(_run(tmp_path, "a", omni))
    again_dir = _run(tmp_path, "again", omni, cache="a")
    assert load_results(again_dir)["timing"]["endpoints"]["model"]["requests"] == 0
    again = {k: s for k, s in _by_request(again_dir).items()}
    assert all(s["spoken"]["audio"] == first[k]["spoken"]["audio"] for k, s in again.items())
    assert all((again_dir / s["spoken"]["audio_file"]).is_file() for s in again.values())

    other_dir = _run(tmp_path, "chelsie", omni, f"{SPEAKING},speaker=Chelsie", cache="a")
    results = load_results(other_dir)
    assert results["model"]["identity"]["audio_output"]["speaker"] == "chelsie"
    assert results["timing"]["endpoints"]["model"]["requests"] == len(first)
    other = _by_request(other_dir)
    assert {k: s["response"] for k, s in other.items()} == {k: s["response"] for k, s in first.items()}
    assert any(
        s["spoken"]["audio"]["sha256"] != first[k]["spoken"]["audio"]["sha256"] for k, s in other.items()
    )


@pytest.mark.slow
def test_a_talker_that_makes_no_speech_codes_is_a_counted_failure_saying_so(tmp_path, omni):
    # one talker step is the prompt's: no speech code follows, nothing to decode
    model_args = "audio_output=true,talker_max_new_tokens=1,max_new_tokens=6"
    code, _out, err = run_cli(_args(tmp_path, "mute", omni, model_args, *TRANSCRIPT))
    assert code == 3 and "got no answer at all: toy_tones" in err, err  # every answer failed: exit code 3
    samples = load_samples(latest_run(tmp_path / "mute"), "toy_tones")
    assert samples and all("the talker made no speech codes" in (s["error"] or "") for s in samples)
    assert all(s.get("spoken") is None for s in samples)


def _error(tmp_path, checkpoint, model_args: str) -> str:
    code, _out, err = run_cli(_args(tmp_path, "err", checkpoint, model_args, *TRANSCRIPT))
    assert code == 2 and "Traceback" not in err, err
    return err


def test_an_unknown_speaker_is_refused_naming_the_known_ones(tmp_path, omni):
    err = _error(tmp_path, omni, "audio_output=true,speaker=Nobody")
    assert str(omni) in err and "speaker=Nobody" in err and "aiden, chelsie, ethan" in err


def test_speaker_without_audio_output_says_to_add_it(tmp_path, omni):
    err = _error(tmp_path, omni, "speaker=ethan")
    assert "add audio_output=true" in err


@pytest.mark.parametrize(
    "family, says",
    [
        ("qwen2_5_omni", "no speech output for Qwen2.5-Omni"),
        ("qwen3_omni", "this checkpoint has no talker"),  # thinker only: enable_audio_output=false
    ],
)
def test_a_checkpoint_that_cannot_speak_is_one_clear_line_naming_it(tmp_path, family, says):
    from tests.support.tiny import build_tiny_model

    checkpoint = build_tiny_model(family, tmp_path / family)
    err = _error(tmp_path, checkpoint, "audio_output=true")
    assert str(checkpoint) in err and says in err


def test_the_tiny_speaking_checkpoint_is_the_same_on_every_build(tmp_path, omni):
    """Every weight comes from the seeded generator (transformers leaves the talker's experts uninitialised
    memory, which made sampling fail now and then): two builds are byte-identical."""
    import hashlib

    from tests.support.tiny_omni import build_tiny_speaking_omni

    again = build_tiny_speaking_omni(tmp_path / "again")

    def digest(folder):
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.safetensors"))
        }

    assert digest(again) == digest(omni) and digest(omni)
