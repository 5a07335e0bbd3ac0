"""Robustness sweeps end to end: results per condition, the robustness table and plot, what results.json
records to regenerate a clip, 1 vs 2 processes and reruns, `audioeval build --augment`, and dsp-oracle
degrading with SNR on AudioCount."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audioeval.augment.episode import recorded_episode
from audioeval.data.builders import make_builder, row_to_episode
from tests.conftest import TOY, latest_run, load_results, load_samples, run_cli, run_two_processes

SWEEP = ["--augment", "noise_snr=20,5", "--augment_target", "all"]


def _args(out: Path, *extra: str) -> list[str]:
    return [
        "--tasks",
        "toy",
        "--include_path",
        str(TOY),
        "--output_path",
        str(out),
        "--log_samples",
        "--no_progress",
        "--model",
        "knn-icl",
        "--bootstrap_iters",
        "200",
        *extra,
    ]


def _query_sha(record: dict) -> str:
    """The last clip of the prompt: the query's."""
    return [p["sha256"] for m in record["messages"] for p in m["content"] if p["type"] == "audio"][-1]


def _query_shas(run_dir: Path, task: str) -> list[str]:
    return [_query_sha(r) for r in load_samples(run_dir, task)]


@pytest.mark.slow
def test_a_sweep_reports_each_condition_beside_the_clean_run(tmp_path):
    code, out, err = run_cli(_args(tmp_path, *SWEEP))
    assert code == 0, err
    run = latest_run(tmp_path)
    results = load_results(run)
    conditions = ["noise_snr=20", "noise_snr=5"]
    for task in ("toy_tones", "toy_tones_chat"):
        assert [t for t in results["results"] if t.startswith(task + "@") or t == task] == [
            task,
            *(f"{task}@{c}" for c in conditions),
        ]
        record = results["configs"][f"{task}@noise_snr=5"]["augment"]
        assert record["condition"] == "noise_snr=5" and record["target"] == "all"
        assert "augment" not in results["configs"][task]
        clean, noisy = _query_shas(run, task), _query_shas(run, f"{task}@noise_snr=5")
        assert len(clean) == len(noisy) and all(a != b for a, b in zip(clean, noisy, strict=True))
    assert set(results["groups"]) == {"toy", "toy@noise_snr=20", "toy@noise_snr=5"}
    assert results["groups"]["toy@noise_snr=5"]["1-shot"]["subtasks"] == [
        "toy_tones@noise_snr=5",
        "toy_tones_chat@noise_snr=5",
    ]
    section = results["robustness"]
    assert section["swept"] == "noise_snr" and section["conditions"] == conditions
    row = next(
        r
        for r in section["rows"]
        if r["task"] == "toy_tones"
        and r["k"] == 3
        and r["metric"] == "accuracy"
        and r["condition"] == "noise_snr=5"
    )
    clean_acc = results["results"]["toy_tones"]["3-shot"]["accuracy"]
    noisy_acc = results["results"]["toy_tones@noise_snr=5"]["3-shot"]["accuracy"]
    assert row["value"] == noisy_acc and row["drop"] == clean_acc - noisy_acc and row["level"] == 5
    assert len(row["drop_ci95"]) == 2
    assert (run / "robustness.md").is_file() and (run / "robustness_noise_snr.png").stat().st_size > 10_000
    assert "| toy_tones | 3 | accuracy | noise_snr=5 |" in (run / "robustness.md").read_text()
    assert "Robustness (drop = loss vs clean" in out

    # a clip is regenerated exactly from what results.json records, and `audioeval view` replays it
    from audioeval.results.run_files import read_run
    from audioeval.viewer.regenerate import RunAudio

    config = results["configs"]["toy_tones@noise_snr=5"]
    builder = make_builder(str(TOY / "toy_tones.py"), "tones", config["config"]["builder_kwargs"])
    regenerated = recorded_episode(builder, 5, config["augment"])
    sample = next(r for r in load_samples(run, "toy_tones@noise_snr=5") if r["episode"] == 5)
    assert _query_sha(sample) == regenerated["query"]["clips"][0]["audio"].sha256
    audio = RunAudio(read_run(run).record.configs, trust_builder_files=True)
    assert audio.wav("toy_tones@noise_snr=5", 5, _query_sha(sample)) is not None
    assert audio.wav("toy_tones", 5, _query_sha(sample)) is None  # the clean episode holds the clean clip

    # a rerun (answers from the cache) gives the same numbers
    code, _, err = run_cli(_args(tmp_path / "again", *SWEEP))
    assert code == 0, err
    again = load_results(latest_run(tmp_path / "again"))
    assert again["results"] == results["results"] and again["robustness"] == results["robustness"]


@pytest.mark.slow
def test_two_processes_match_one_under_augmentation(tmp_path):
    extra = [*SWEEP, "--no_cache", "--batch_size", "3"]
    proc = run_two_processes(_args(tmp_path / "two", *extra))
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = latest_run(tmp_path / "two")
    code, _, err = run_cli(_args(tmp_path / "one", *extra))
    assert code == 0, err
    one = latest_run(tmp_path / "one")
    assert load_results(two)["world_size"] == 2
    for key in ("results", "groups", "robustness"):
        assert load_results(one)[key] == load_results(two)[key]
    for task in load_results(one)["results"]:
        assert load_samples(one, task) == load_samples(two, task)


def test_build_writes_the_clips_a_run_evaluates(tmp_path):
    import datasets

    builder = str(TOY / "toy_tones.py")
    code, out, err = run_cli(
        ["build", builder, "--output_dir", str(tmp_path / "clean"), "--n_episodes", "12"]
    )
    assert code == 0, err
    code, out, err = run_cli(
        ["build", builder, "--output_dir", str(tmp_path / "noisy"), "--n_episodes", "12", *SWEEP]
    )
    assert code == 0, err
    card = (tmp_path / "noisy" / "README.md").read_text()
    assert (
        "config_name: tones@noise_snr=5" in card and "--augment noise_snr=20,5 --augment_target all" in card
    )
    clean = datasets.load_dataset(str(tmp_path / "clean"), "tones", split="test")
    code, _, err = run_cli(_args(tmp_path / "run", *SWEEP, "--tasks", "toy_tones"))
    assert code == 0, err
    run = latest_run(tmp_path / "run")
    for level in (20, 5):
        noisy = datasets.load_dataset(str(tmp_path / "noisy"), f"tones@noise_snr={level}", split="test")
        run_shas = _query_shas(run, f"toy_tones@noise_snr={level}")[::3]  # one record per k (0, 1, 3)
        for index, (a, b) in enumerate(zip(clean, noisy, strict=True)):
            ea, eb = row_to_episode(a), row_to_episode(b)
            for shot_a, shot_b in zip([*ea["demos"], ea["query"]], [*eb["demos"], eb["query"]], strict=True):
                x = shot_a["clips"][0]["audio"].samples.astype(np.float64)
                y = shot_b["clips"][0]["audio"].samples.astype(np.float64)
                snr = 10 * np.log10(np.sum(x**2) / np.sum((y - x) ** 2))
                assert abs(snr - level) <= 0.5
            assert eb["query"]["clips"][0]["audio"].sha256 == run_shas[index]


@pytest.mark.slow
def test_dsp_oracle_on_audio_count_degrades_monotonically_with_snr(tmp_path):
    code, _, err = run_cli(
        [
            "--tasks",
            "audioicl_audio_count",
            "--model",
            "dsp-oracle",
            "--limit",
            "16",
            "--num_fewshot",
            "3",
            "--augment",
            "noise_snr=30,0,-10,-20",
            "--bootstrap_iters",
            "0",
            "--no_progress",
            "--output_path",
            str(tmp_path),
        ]
    )
    assert code == 0, err
    results = load_results(latest_run(tmp_path))["results"]
    names = ["audioicl_audio_count"] + [f"audioicl_audio_count@noise_snr={s}" for s in (30, 0, -10, -20)]
    accuracy = [results[n]["3-shot"]["accuracy"] for n in names]
    assert accuracy == sorted(accuracy, reverse=True), accuracy
    assert accuracy[1] >= accuracy[0] - 0.07  # 30 dB: near the clean score
    assert accuracy[-1] <= accuracy[0] - 0.5  # -20 dB: far below it
