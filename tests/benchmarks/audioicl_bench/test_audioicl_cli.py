"""End to end: `audioeval --model chance` on AudioICL-Bench tasks (results, report, plot), and
`audioeval build` / `audioeval push` for the Hub layout."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from audioeval.audio.wav import to_pcm16
from audioeval.cli import main
from audioeval.data.builders import make_builder, row_to_episode


@pytest.mark.slow
def test_chance_run_writes_results_report_and_plot(tmp_path, capsys):
    code = main(
        [
            "--tasks", "audioicl_audio_count,audioicl_audio_remap,audioicl_morse_code",
            "--model", "chance",
            "--limit", "4",
            "--task_args", "n_episodes=4,max_shots=3",
            "--num_fewshot", "0,1,3",
            "--output_path", str(tmp_path),
            "--no_cache", "--no_progress", "--log_samples",
            "--bootstrap_iters", "200",
        ]
    )  # fmt: skip
    assert code == 0
    run_dir = next(tmp_path.glob("chance/*"))
    results = json.loads((run_dir / "results.json").read_text())
    for task in ("audioicl_audio_count", "audioicl_audio_remap", "audioicl_morse_code"):
        for k in (0, 1, 3):
            block = results["results"][task][f"{k}-shot"]
            assert block["n"] == 4 and 0.0 <= block["accuracy"] <= 1.0 and block["parse_failure_rate"] == 0.0
            assert len(block["accuracy_ci95"]) == 2
    report = (run_dir / "audioicl_report.md").read_text()
    assert (
        "| AudioCount (AC) | A2 | 12.5 |" in report
        and "**A2 average**" not in report
        and "No A2 average: its group `audioicl_a2` was not run (2 of its 6 tasks were)" in report
    )
    assert "No A3 average: its group `audioicl_a3` was not run (1 of its 3 tasks were)" in report
    png = (run_dir / "audioicl_shot_scaling.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert sorted(Path(p).name for p in results["reports"]) == [
        "audioicl_report.md",
        "audioicl_shot_scaling.png",
    ]
    samples = [
        json.loads(line) for line in (run_dir / "samples_audioicl_morse_code.jsonl").read_text().splitlines()
    ]
    assert len(samples) == 12 and all(s["prediction"] in s["response"].lower() for s in samples)
    assert "report: " in capsys.readouterr().out


@pytest.mark.slow
def test_group_run_aggregates_a2_and_a3_once_per_task(tmp_path):
    from audioeval.run.conductor import RunConfig, run_evaluation

    out = run_evaluation(
        RunConfig(
            tasks="audioicl_a3,audioicl_audio_length",
            model="chance",
            num_fewshot=[1],
            task_args={"n_episodes": 2, "max_shots": 1},
            limit="2",
            no_cache=True,
            show_progress=False,
            bootstrap_resamples=100,
        )
    )
    assert sorted(out["results"]) == [
        "audioicl_audio_length",
        "audioicl_audio_length_hard",
        "audioicl_morse_code",
    ]
    a3 = out["groups"]["audioicl_a3"]["1-shot"]
    assert a3["subtasks"] == ["audioicl_audio_length", "audioicl_audio_length_hard", "audioicl_morse_code"]
    mean = np.mean([out["results"][t]["1-shot"]["accuracy"] for t in a3["subtasks"]])
    assert a3["accuracy"] == pytest.approx(mean)


@pytest.mark.slow
def test_report_formats_the_group_average_and_the_reference_shortcut_from_results_json(tmp_path):
    """The A3 row is the audioicl_a3 group of results.json with its CI; the shortcut column is the
    `shortcut` reference model the core scored on the same episodes (with CIs of its own)."""
    code = main(
        [
            "--tasks", "audioicl_a3",
            "--model", "chance",
            "--limit", "4",
            "--task_args", "n_episodes=4,max_shots=1",
            "--num_fewshot", "1",
            "--output_path", str(tmp_path),
            "--no_cache", "--no_progress",
            "--bootstrap_iters", "200",
        ]
    )  # fmt: skip
    assert code == 0
    run_dir = next(tmp_path.glob("chance/*"))
    results = json.loads((run_dir / "results.json").read_text())
    group = results["groups"]["audioicl_a3"]["1-shot"]
    lo, hi = (f"{100 * x:.1f}" for x in group["accuracy_ci95"])
    shortcut = results["reference_models"]["shortcut"]
    assert set(shortcut) == {
        "audioicl_audio_length",
        "audioicl_audio_length_hard",
        "audioicl_morse_code",
        "audioicl_a3",
    }
    assert len(shortcut["audioicl_morse_code"]["1-shot"]["accuracy_ci95"]) == 2
    report = (run_dir / "audioicl_report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| **A3 average**"))
    assert row == (
        f"| **A3 average** | A3 | | {100 * shortcut['audioicl_a3']['1-shot']['accuracy']:.1f} | "
        f"{100 * group['accuracy']:.1f} [{lo}, {hi}] | |"
    )
    assert "A2 = AC, ACH, AO, AOH, AR, AD; A3 = AL, ALH, MC (unweighted means" in report


def test_build_round_trip_with_load_dataset(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "hub"
    code = main(["build", "audioicl_bench", "--output_dir", str(out), "--configs", "audio_remap,morse_letter", "--n_episodes", "2", "--max_shots", "2"])  # fmt: skip
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "audio_remap", "morse_letter"]
    card = (out / "README.md").read_text()
    assert "config_name: audio_remap" in card and "path: morse_letter/test-*.parquet" in card
    assert not list(tmp_path.glob(".hub.building-*"))
    builder = make_builder("audioicl_bench", "audio_remap", {"n_episodes": 2, "max_shots": 2})
    ds = datasets.load_dataset(str(out), "audio_remap", split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 2
    for row in ds:
        original = builder.episode(row["index"])
        decoded = row["query"]["clips"][2]["audio"].get_all_samples()
        assert decoded.sample_rate == 16000
        pcm = np.round(decoded.data.numpy()[0] * 32768).astype(np.int64)
        assert np.array_equal(pcm, to_pcm16(original["query"]["clips"][2]["audio"].samples))
        back = row_to_episode(row)
        assert back["metadata"] == json.loads(json.dumps(original["metadata"]))
        assert back["query"]["label"] == original["query"]["label"]
        for shot_back, shot in zip(
            [back["query"], *back["demos"]], [original["query"], *original["demos"]], strict=True
        ):
            for a, b in zip(shot_back["clips"], shot["clips"], strict=True):
                assert np.array_equal(a["audio"].samples, b["audio"].samples) and a["label"] == b["label"]
    letters = datasets.load_dataset(str(out), "morse_letter", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(letters[0]["context"]) == 26


def test_build_rejects_bad_arguments_before_writing(tmp_path, capsys):
    out = tmp_path / "hub"
    assert main(["build", "audioicl_bench", "--output_dir", str(out), "--configs", "audio_cont"]) == 2
    assert "unknown config of audioicl_bench 'audio_cont'" in capsys.readouterr().err
    assert main(["build", "audioicl_bench", "--output_dir", str(out), "--max_shots", "7"]) == 2
    assert "too many for audio_remap" in capsys.readouterr().err
    assert (
        main(["build", "audioicl_bench", "--output_dir", str(out), "--builder_args", "osps_dir=/nope"]) == 2
    )
    assert "osps_dir=/nope: no such folder" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())


def test_push_arguments_and_mocked_upload(tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    folder = tmp_path / "hub"
    folder.mkdir()
    assert main(["push", str(folder), "--repo_id", "org/name"]) == 2
    assert "not a dataset written by `audioeval build`" in capsys.readouterr().err
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: audio_count\n  data_files:\n  - split: test\n    path: audio_count/*\n---\n"
    )
    assert main(["push", str(folder), "--repo_id", "noslash"]) == 2
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no_saved_login" / "token"))
    assert main(["push", str(folder), "--repo_id", "org/name"]) == 2
    assert "no Hugging Face token" in capsys.readouterr().err
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    with mock.patch("huggingface_hub.HfApi") as api:
        api.return_value.upload_folder.return_value = mock.Mock(oid="abc")
        assert main(["push", str(folder), "--repo_id", "org/name", "--private"]) == 0
    api.assert_called_once_with()  # huggingface_hub resolves the token itself (environment or saved login)
    api.return_value.create_repo.assert_called_once_with(
        "org/name", repo_type="dataset", private=True, exist_ok=True
    )
    assert api.return_value.upload_folder.call_args.kwargs["folder_path"] == str(folder.resolve())
    captured = capsys.readouterr()
    assert "hf_secret_value" not in captured.out + captured.err
