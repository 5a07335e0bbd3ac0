"""dsp-oracle reads AudioICL-Bench answers from the signal with constants calibrated on each episode. Checked on
episodes built with seeds and settings the defaults do not use (other Morse speed and pitch, a stronger
anomaly, other seeds and sizes), through the harness; plus its refusal of unsupported tasks, its k=0
fallback, and that it never reads the episode metadata or the shots' facts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle import METHODS, DspOracleModel
from audioeval.data.builders import make_builder
from audioeval.errors import ModelError
from audioeval.models.registry import create_model
from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.types import Request, RequestId, ShownEpisode
from tests.conftest import run_cli

# settings no test elsewhere and no default uses
ODD_SETTINGS = {"morse_wpm": 31.0, "morse_tone_hz": 870.0, "anomaly_strength_db": -8.0}


def _run(tmp_path: Path, tasks: str, shots: list[int], n: int, seed: int, **task_args) -> dict:
    out = run_evaluation(
        RunConfig(
            tasks=tasks,
            model="dsp-oracle",
            num_fewshot=shots,
            task_args={"n_episodes": n, **task_args},
            seed=seed,
            output_path=str(tmp_path),
            log_samples=True,
            no_cache=True,
            bootstrap_resamples=200,
            show_progress=False,
        )
    )
    assert out is not None
    return out


def _accuracy(out: dict, task: str, k: int) -> float:
    block = out["results"][task][f"{k}-shot"]
    assert block["parse_failure_rate"] == 0.0
    return block["accuracy"]


def _samples(out: dict, task: str) -> list[dict]:
    path = Path(out["run_dir"]) / f"samples_{task}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_reads_the_answer_where_the_signal_determines_it(tmp_path):
    tasks = [
        "audioicl_audio_count",
        "audioicl_audio_count_hard",
        "audioicl_audio_length",
        "audioicl_audio_length_hard",
        "audioicl_audio_remap",
        "audioicl_morse_code",
        "audioicl_morse_letter",
        "audioicl_anomaly_detect",
    ]
    out = _run(tmp_path, ",".join(tasks), [0, 3, 5], n=12, seed=17, **ODD_SETTINGS)
    # chance: 12.5% (counts), 5% (lengths), 12.5% (remap), ~0 (Morse words), 3.8% (letters), 50% (anomaly)
    for task in tasks[:4]:
        assert _accuracy(out, task, 3) >= 0.8, task
        assert _accuracy(out, task, 5) >= 0.8, task
    # the bank and the query's labelled anchors are calibration enough: no demos needed
    for task in ("audioicl_audio_remap", "audioicl_morse_code", "audioicl_morse_letter"):
        assert _accuracy(out, task, 0) >= 0.9, task
        assert _accuracy(out, task, 3) >= 0.9, task
    assert _accuracy(out, "audioicl_anomaly_detect", 5) >= 0.75
    morse = _samples(out, "audioicl_morse_code")
    info = morse[0]["response_info"]["dsp_oracle"]
    assert abs(info["tone_hz"] - 870.0) < 5  # measured on the bank, not taken from the settings
    assert abs(info["dash_above_s"] - 2 * 1.2 / 31.0) < 1.2 / 31.0  # between a dot and a dash at 31 wpm


@pytest.mark.slow
def test_operator_tasks_need_many_demos_but_get_well_above_chance(tmp_path):
    tasks = "audioicl_audio_operator,audioicl_audio_operator_hard"
    out = _run(tmp_path, tasks, [7], n=16, seed=23, max_shots=7)
    assert _accuracy(out, "audioicl_audio_operator", 7) >= 0.5  # chance 33%
    assert _accuracy(out, "audioicl_audio_operator_hard", 7) >= 0.4  # chance 11%
    # the signal side is exact: the spoken digits fall into one cluster per distinct digit of the episode
    for task in tasks.split(","):
        builder = make_builder(
            "audioicl_bench", task.removeprefix("audioicl_"), {"n_episodes": 16, "seed": 23, "max_shots": 7}
        )
        for sample in _samples(out, task):
            episode = builder.episode(sample["episode"])
            digits = {d for shot in [*episode["demos"], episode["query"]] for d in shot["operands"]}
            assert sample["response_info"]["dsp_oracle"]["digit_clusters"] == len(digits), episode["id"]


@pytest.mark.slow
def test_k0_falls_back_to_the_label_space_where_nothing_can_be_calibrated(tmp_path):
    out = _run(tmp_path, "audioicl_audio_length,audioicl_audio_remap", [0, 1], n=6, seed=29)
    for sample in _samples(out, "audioicl_audio_length"):
        info = sample["response_info"]["dsp_oracle"]
        if sample["shots"] == 0:
            assert (
                info["fallback"].startswith("k=0: no demonstrations") and 1 <= int(sample["response"]) <= 20
            )
        else:
            assert "fallback" not in info and info["measure"] == "total seconds"
    assert all(
        "fallback" not in s["response_info"]["dsp_oracle"] for s in _samples(out, "audioicl_audio_remap")
    )


def _requests(config: str, episode: dict, shots: list[int], choices: list[str]) -> list[Request]:
    return [
        Request(
            messages=(),
            gen_kwargs={},
            rid=RequestId(f"audioicl_{config}", k, episode["index"]),
            choices=tuple(choices),
            shown=ShownEpisode.of(episode, k, config),
        )
        for k in shots
    ]


def _without_facts(episode: dict) -> dict:
    """Only what a prompt shows survives: clips, their shown labels, demo labels. Metadata, shot facts and the
    query's label are replaced by wrong values."""
    blind = copy.deepcopy(episode)
    blind["metadata"] = {"task": "nothing to see", "letters": {"A": "?", "B": "?"}, "morse": {"wpm": 99}}
    for shot in [*blind["demos"], blind["query"]]:
        for key in list(shot):
            if key not in ("clips", "label"):
                shot[key] = None
    blind["query"]["label"] = "0"
    return blind


@pytest.mark.parametrize("config", ["audio_count", "audio_remap", "morse_letter", "audio_operator_hard"])
def test_answers_come_from_the_audio_not_from_metadata_or_facts(config):
    builder = make_builder("audioicl_bench", config, {"n_episodes": 3, "seed": 41})
    model = create_model("dsp-oracle", {}, batch_size=1, seed=0)
    for index in range(3):
        episode = builder.episode(index)
        shots = {"morse_letter": [0, 2], "audio_operator_hard": [3, 5]}.get(config, [1, 3, 5])
        plain = model.generate(_requests(config, episode, shots, ["x"]))
        blind = model.generate(_requests(config, _without_facts(episode), shots, ["x"]))
        assert [r.text for r in plain] == [r.text for r in blind]
        assert all(r.text != "x" for r in plain)  # read from the audio, not drawn


def test_unsupported_task_is_refused_before_any_work_naming_the_supported_tasks(tmp_path, toy_dir):
    code, out, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "dsp-oracle"]
        + ["--output_path", str(tmp_path), "--no_cache"]
    )
    assert code == 2 and "has no method for task 'toy_tones'" in err
    assert all(f"audioicl_{config}" in err for config in METHODS)
    assert not list(tmp_path.iterdir())  # no run folder: the model was never created
    with pytest.raises(ModelError, match="It supports the AudioICL-Bench tasks"):
        DspOracleModel.check_task("adu_bench_open", None)
    DspOracleModel.check_task("audioicl_morse_letter", "morse_letter")
