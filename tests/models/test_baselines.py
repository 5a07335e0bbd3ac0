"""Non-LLM reference baselines: demo-majority and knn-icl learn only from the episode's demonstrations."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.models.baselines.knn_icl import nearest_label, ridge_predict
from tests.conftest import latest_run, load_results, load_samples, run_cli


def test_ridge_regression_recovers_a_numeric_rule():
    rng = np.random.default_rng(0)
    durations = np.array([1.0, 3.0, 5.0, 8.0])
    features = np.column_stack([durations, rng.normal(size=4) * 0.01, np.log(durations)])
    query = np.array([6.0, 0.0, np.log(6.0)])
    assert abs(ridge_predict(features, durations, query, alpha=0.01) - 6.0) < 1.0


def test_nearest_label():
    train = np.array([[0.0, 1.0], [10.0, 1.0], [0.5, 1.0]])
    assert nearest_label(train, ["a", "b", "a"], np.array([9.0, 1.0])) == "b"


def _run(toy_dir, tmp_path, model, *extra):
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(toy_dir),
            "--model",
            model,
            "--no_cache",
            "--output_path",
            str(tmp_path / model),
            "--log_samples",
            "--no_progress",
            *extra,
        ]
    )
    assert code == 0, err
    run_dir = latest_run(tmp_path / model)
    return load_results(run_dir)["results"]["toy_tones"], load_samples(run_dir, "toy_tones")


def test_demo_majority_answers_the_most_frequent_demo_label(toy_dir, tmp_path):
    from audioeval.data.builders import make_builder

    _, samples = _run(toy_dir, tmp_path, "demo-majority")
    builder = make_builder(str(toy_dir / "toy_tones.py"), "tones", {"n_episodes": 12, "seed": 0})
    for s in samples:
        if s["shots"] == 3:
            labels = [d["label"] for d in builder.episode(s["episode"])["demos"][:3]]
            assert s["response"] == max(set(labels), key=labels.count)


def test_knn_icl_learns_from_demonstrations(toy_dir, tmp_path):
    results, _ = _run(toy_dir, tmp_path, "knn-icl")
    # tone height is perfectly separable: with three demos the nearest neighbour is always right
    assert results["3-shot"]["accuracy"] == 1.0
    assert results["0-shot"]["parse_failure_rate"] == 0.0


@pytest.mark.slow
def test_knn_icl_with_a_local_clap_checkpoint(toy_dir, tmp_path):
    from transformers import ClapConfig, ClapFeatureExtractor, ClapModel

    config = ClapConfig(
        text_config=dict(
            vocab_size=100,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
            projection_dim=16,
        ),
        audio_config=dict(
            hidden_size=32,
            depths=[1, 1],
            num_attention_heads=[1, 2],
            patch_embeds_hidden_size=16,
            projection_dim=16,
            spec_size=256,
            window_size=8,
            num_mel_bins=64,
            patch_stride=(4, 4),
            patch_size=4,
            enable_fusion=False,
        ),
        projection_dim=16,
    )
    checkpoint = tmp_path / "tiny-clap"
    ClapModel(config).save_pretrained(checkpoint)
    ClapFeatureExtractor(
        feature_size=64, sampling_rate=48000, hop_length=480, max_length_s=10, truncation="rand_trunc"
    ).save_pretrained(checkpoint)
    results, samples = _run(
        toy_dir, tmp_path, "knn-icl", "--model_args", f"clap={checkpoint}", "--limit", "4"
    )
    assert results["3-shot"]["n"] == 4 and all(s["response"] in ("low", "high") for s in samples)
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(toy_dir),
            "--model",
            "knn-icl",
            "--model_args",
            f"clap={tmp_path / 'missing'}",
            "--no_cache",
        ]
    )
    assert code == 2 and "not a folder with a CLAP checkpoint" in err


def test_demo_majority_without_demos_or_label_space_is_an_error(tmp_path, toy_dir):
    import shutil

    folder = tmp_path / "toy"
    shutil.copytree(toy_dir, folder)
    yaml = folder / "toy_tones.yaml"
    yaml.write_text(yaml.read_text().replace("label_space: [low, high]\n", ""))
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(folder),
            "--model",
            "demo-majority",
            "--num_fewshot",
            "0",
            "--no_cache",
        ]
    )
    assert code == 2 and "needs demonstrations (k >= 1) or a task label space" in err
