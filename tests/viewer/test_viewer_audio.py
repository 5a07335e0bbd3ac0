"""The audio the viewer plays is the audio the model heard: rebuilt from the run's recorded task config and
identical (sha256) to what the sample log names; anything else is marked and never served."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from viewer_helpers import api, audio_parts, get, logged_audio, serve

from audioeval.audio.wav import decode_wav
from audioeval.types import AudioClip
from audioeval.viewer.regenerate import SHA_DIFFERS


def _served_clips_match_the_log(run_dir: Path, task: str, index: int = 0) -> int:
    record, logged = logged_audio(run_dir, task, index)
    key = f"{record['task']}/{record['episode']}/{record['shots']}"
    with serve(run_dir) as server:
        detail = api(server, f"run/0/sample/{key}")
        parts = audio_parts(detail)
        assert [p["sha256"] for p in parts] == [p["sha256"] for p in logged]
        assert all(p["status"] == "ok" for p in parts), parts
        for part in {p["sha256"]: p for p in parts}.values():
            status, headers, body = get(server, "/" + part["url"])
            assert status == 200 and headers["Content-Type"] == "audio/wav"
            samples, rate = decode_wav(body)
            clip = AudioClip.from_array(samples, rate)
            assert clip.sha256 == part["sha256"]  # the bytes served are the bytes the model heard
            assert abs(clip.seconds - part["seconds"]) < 1e-3
    return len(parts)


@pytest.mark.slow
def test_clips_of_each_benchmark_are_rebuilt_identical_to_the_logged_sha256(
    audioicl_runs, alice_run, adu_run
):
    assert (
        _served_clips_match_the_log(audioicl_runs[0], "audioicl_audio_remap", index=2) >= 9
    )  # k=3: 3 demos x 3
    assert (
        _served_clips_match_the_log(alice_run, "alice_s1_ser_ceq", index=1) == 2
    )  # k=1: a demo and the query
    assert _served_clips_match_the_log(adu_run, "adu_skill") == 1


@pytest.mark.slow
def test_clip_places_and_labels_follow_the_prompt_even_when_the_same_audio_repeats(audioicl_runs):
    """AudioRemap repeats the A and B reference sounds in every demo and the query: each occurrence gets its own
    place, in prompt order."""
    record, _ = logged_audio(audioicl_runs[0], "audioicl_audio_remap", index=2)
    assert record["shots"] == 3
    with serve(audioicl_runs[0]) as server:
        parts = audio_parts(api(server, f"run/0/sample/audioicl_audio_remap/{record['episode']}/3"))
    assert [p["place"] for p in parts] == [f"demo {i}" for i in (1, 2, 3) for _ in range(3)] + ["query"] * 3
    assert [p["role"] for p in parts] == ["A", "B", "MIX"] * 4
    assert parts[2]["label"] and len(parts[2]["label"]) == 3  # a MIX clip's label: the three letters


def _copy_run(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    return dest


def _edit_results(run_dir: Path, edit) -> None:
    path = run_dir / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


@pytest.mark.slow
def test_a_changed_builder_shows_the_samples_with_their_audio_marked_and_never_served(toy_runs, tmp_path):
    """A run whose recorded config no longer yields the logged audio (here: another seed, as from a changed
    builder or another audioeval version) still shows every sample; each clip says why it cannot be played."""
    run = _copy_run(toy_runs[0], tmp_path / "run")

    def reseed(results):
        for block in results["configs"].values():
            block["config"]["builder_kwargs"]["seed"] = 12345
        results["versions"]["audioeval"] = "0.0.1"

    _edit_results(run, reseed)
    record, logged = logged_audio(run, "toy_tones", 1)
    with serve(run) as server:
        detail = api(server, f"run/0/sample/toy_tones/{record['episode']}/{record['shots']}")
        parts = audio_parts(detail)
        assert len(parts) == len(logged) > 0
        assert all(p["status"] == "differs" and p["note"] == SHA_DIFFERS and p["url"] is None for p in parts)
        assert detail["audio"] == {"clips": len(parts), "playable": 0, "problem": None}
        assert detail["response"] == record["response"] and detail["target"] == record["target"]
        for p in parts:
            assert get(server, f"/audio/0/toy_tones/{record['episode']}/{p['sha256']}.wav")[0] == 404
        overview = api(server, "run/0/overview")["html"]
        assert "made with audioeval 0.0.1" in overview


def test_a_builder_that_cannot_be_loaded_is_named_on_each_clip(toy_runs, tmp_path):
    run = _copy_run(toy_runs[0], tmp_path / "run")

    def break_builder(results):
        results["configs"]["toy_tones"]["builder_file"] = str(tmp_path / "gone" / "toy_tones.py")

    _edit_results(run, break_builder)
    record, _ = logged_audio(run, "toy_tones", 0)
    with serve(run) as server:
        parts = audio_parts(api(server, f"run/0/sample/toy_tones/{record['episode']}/{record['shots']}"))
    assert parts and all(p["status"] == "unavailable" for p in parts)
    assert "cannot be regenerated (builder file ./toy_tones.py is not at" in parts[0]["note"]


@pytest.mark.parametrize("k_index", [0, 2])
def test_toy_clips_and_labels(toy_runs, k_index):
    record, logged = logged_audio(toy_runs[0], "toy_tones", k_index)
    with serve(toy_runs[0]) as server:
        detail = api(server, f"run/0/sample/toy_tones/{record['episode']}/{record['shots']}")
    parts = audio_parts(detail)
    assert [p["status"] for p in parts] == ["ok"] * len(logged)
    assert parts[-1]["place"] == "query" and parts[-1]["label"] == record["target"]
    assert [p["place"] for p in parts[:-1]] == [f"demo {i}" for i in range(1, record["shots"] + 1)]
    assert detail["metadata"] == record["metadata"] and detail["metadata_source"] == "sample log"
