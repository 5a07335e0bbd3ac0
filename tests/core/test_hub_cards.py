"""Dataset cards a Hub user can trust: licences, citation, pretty name, task categories, every feature described,
the generation parameters, `dataset_info` as `push_to_hub` writes it, and never a local path."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from audioeval.data.builders import builder_config_names, builder_names, load_builder_class, make_builder
from audioeval.data.card import feature_paths
from tests.alice_testutil import isolated_cache, write_layout  # noqa: F401
from tests.conftest import run_cli


def _fake_fsdd(root: Path) -> Path:
    """A tiny spoken-digit folder in FSDD's layout (tones instead of speech): enough for the builder."""
    folder = root / "recordings"
    folder.mkdir(parents=True)
    t = np.arange(2000) / 8000
    for digit in range(10):
        for take in range(2):
            samples = (0.3 * np.sin(2 * np.pi * (300 + 40 * digit + 7 * take) * t) * 32767).astype("<i2")
            with wave.open(str(folder / f"{digit}_jackson_{take}.wav"), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(8000)
                w.writeframes(samples.tobytes())
    return root


@pytest.mark.parametrize("benchmark", builder_names())
def test_every_feature_of_every_shipped_config_is_described(benchmark):
    cls = load_builder_class(benchmark)
    assert cls.ABOUT is not None
    assert cls.ABOUT.citation.lstrip().startswith("@") and "title" in cls.ABOUT.citation
    for config in builder_config_names(cls):
        features = cls(config_name=config).features_for_hub()
        missing = [path for path, _ in feature_paths(features) if not cls.ABOUT.features.get(path)]
        assert not missing, f"{benchmark}/{config}: no description for {missing}"


def test_card_read_as_a_hub_user_reads_it(tmp_path):
    import datasets
    from huggingface_hub import DatasetCard

    secret = tmp_path / "private-corpora-xyz"
    fsdd = _fake_fsdd(secret / "fsdd")
    out = tmp_path / "hub"
    code, _, err = run_cli(
        [
            "build",
            "audioicl_bench",
            "--output_dir",
            str(out),
            "--configs",
            "audio_operator",
            "--n_episodes",
            "2",
            "--max_shots",
            "2",
            "--seed",
            "4",
            "--builder_args",
            f"fsdd_dir={fsdd},morse_wpm=18",
        ]
    )
    assert code == 0, err
    card = DatasetCard.load(out / "README.md")
    meta = card.data.to_dict()
    assert meta["pretty_name"] == "AudioICL-Bench episodes (audioeval)"
    assert meta["license"] == [
        "apache-2.0",
        "cc-by-sa-4.0",
    ]  # audioeval's generated audio + the FSDD recordings
    assert "audio-classification" in meta["task_categories"] and meta["language"] == ["en"]
    generation = meta["audioeval"]
    assert (generation["seed"], generation["n_episodes"], generation["max_shots"]) == (4, 2, 2)
    assert generation["parameters"] == {"morse_wpm": 18}
    assert generation["sources"] == {"fsdd_dir": "Free Spoken Digit Dataset (a local copy)"}
    assert (
        set(generation["versions"]) == {"audioeval", "datasets"} and generation["builder_version"] == "1.0.0"
    )
    body = card.text
    assert "@inproceedings{chen2026audioiclbench" in body and "Interspeech 2026" in body
    assert "publishes no licence" in body and "CC BY-SA" not in meta  # licence words in the body, ids in YAML
    assert "Creative Commons Attribution-ShareAlike 4.0" in body
    builder = make_builder("audioicl_bench", "audio_operator", {"n_episodes": 2})
    for path, _ in feature_paths(builder.features_for_hub()):
        assert f"| `{path}` |" in body  # every feature in the features table, with its description
    # dataset_info as push_to_hub writes it: datasets reads the same features back from the card
    infos = datasets.info.DatasetInfosDict.from_dataset_card_data(card.data)
    assert infos["audio_operator"].features == builder.features_for_hub()
    assert infos["audio_operator"].splits["test"].num_examples == 2
    ds = datasets.load_dataset(str(out), "audio_operator", split="test", cache_dir=str(tmp_path / "cache"))
    assert ds.features == infos["audio_operator"].features
    # no local path anywhere in the folder: not in the card, not in the parquet rows
    for file in out.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert str(secret).encode() not in data and b"private-corpora-xyz" not in data, file
    assert "fsdd_dir=<Free Spoken Digit Dataset>" in body  # the rebuild command names the corpus instead


def test_a_build_from_a_local_alice_copy_keeps_its_paths_out(tmp_path):
    from huggingface_hub import DatasetCard

    secret = tmp_path / "my-private-alice-copy"
    write_layout(secret)
    out = tmp_path / "hub"
    code, _, err = run_cli(
        [
            "build",
            "alice",
            "--output_dir",
            str(out),
            "--configs",
            "ser_ceq,demo_pool",
            "--max_shots",
            "2",
            "--builder_args",
            f"data_dir={secret},check_audio=false",
        ]
    )
    assert code == 0, err
    for file in out.rglob("*"):
        if file.is_file():
            assert b"my-private-alice-copy" not in file.read_bytes(), file
    meta = DatasetCard.load(out / "README.md").data.to_dict()
    assert meta["license"] == ["apache-2.0", "unknown"]  # the local copy's data states no licence
    assert meta["audioeval"]["sources"] == {
        "data_dir": "Speech-IFEval / ALICE evaluation files and demonstration pool (a local copy)"
    }
    assert meta["audioeval"]["parameters"] == {"check_audio": False}
