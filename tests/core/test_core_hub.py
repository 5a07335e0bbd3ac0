"""`audioeval build` writes a Hub-layout folder that `datasets.load_dataset` reads offline; `push` uploads it."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.data.builders import make_builder
from audioeval.data.card import read_card
from tests.conftest import TOY, run_cli

BUILDER = str(TOY / "toy_tones.py")


def test_build_round_trip_through_load_dataset(tmp_path):
    import datasets

    out = tmp_path / "hub"
    code, stdout, err = run_cli(
        ["build", BUILDER, "--output_dir", str(out), "--n_episodes", "5", "--seed", "3"]
    )
    assert code == 0, err
    card = read_card(out, "the build")
    assert card.configs == {"tones": {"test": ["tones/test-*.parquet"]}}
    assert sorted(p.name for p in (out / "tones").iterdir()) == ["test-00000-of-00001.parquet"]
    ds = datasets.load_dataset(str(out), "tones", split="test")
    assert len(ds) == 5
    builder = make_builder(BUILDER, "tones", {"n_episodes": 5, "seed": 3})
    for index in (0, 4):
        row, episode = ds[index], builder.episode(index)
        assert row["id"] == episode["id"] and row["query"]["label"] == episode["query"]["label"]
        decoded = row["query"]["clips"][0]["audio"].get_all_samples()
        assert decoded.sample_rate == 16000
        expected = episode["query"]["clips"][0]["audio"].samples
        assert np.max(np.abs(decoded.data.numpy()[0] - expected)) < 1e-4  # same samples (16-bit grid)
        assert len(row["demos"]) == 3


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    from audioeval.data.builders import load_builder_class

    cls = load_builder_class(BUILDER)
    original = cls.episode

    def failing(self, index):
        if index == 2:
            raise RuntimeError("synthesis failed")
        return original(self, index)

    monkeypatch.setattr(cls, "episode", failing)
    out = tmp_path / "hub"
    with pytest.raises(RuntimeError, match="synthesis failed"):
        run_cli(["build", BUILDER, "--output_dir", str(out), "--n_episodes", "4"])
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_build_rejects_unknown_builder_and_config(tmp_path):
    code, _, err = run_cli(["build", "audioicl_benc", "--output_dir", str(tmp_path / "x")])
    assert code == 2 and "unknown benchmark 'audioicl_benc'" in err
    code, _, err = run_cli(["build", BUILDER, "--output_dir", str(tmp_path / "x"), "--configs", "tone"])
    assert code == 2 and "unknown config of" in err and "tones" in err
    code, _, err = run_cli(
        ["build", BUILDER, "--output_dir", str(tmp_path / "x"), "--builder_args", "colour=red"]
    )
    assert code == 2 and "colour" in err


def test_push_takes_the_token_as_huggingface_hub_finds_it_and_never_prints_it(tmp_path, monkeypatch):
    import huggingface_hub
    from huggingface_hub import constants

    out = tmp_path / "hub"
    assert run_cli(["build", BUILDER, "--output_dir", str(out), "--n_episodes", "2"])[0] == 0
    calls = {}

    class FakeApi:
        def __init__(self, token=None):
            calls["token"] = token or huggingface_hub.get_token()  # what HfApi sends: its own resolution

        def create_repo(self, repo_id, **kwargs):
            calls["repo"] = (repo_id, kwargs)

        def upload_folder(self, **kwargs):
            calls["upload"] = kwargs
            return type("Info", (), {"oid": "abc"})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    saved = tmp_path / "hf_home" / "token"
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(saved))
    code, _, err = run_cli(["push", str(out), "--repo_id", "org/toy"])
    assert code == 2 and "hf auth login" in err and "HF_TOKEN" in err
    # the token `hf auth login` saved, with no environment variable
    saved.parent.mkdir()
    saved.write_text("hf_saved_login_token\n")
    code, stdout, err = run_cli(["push", str(out), "--repo_id", "org/toy", "--private"])
    assert code == 0, err
    assert calls["token"] == "hf_saved_login_token" and calls["repo"] == (
        "org/toy",
        {"repo_type": "dataset", "private": True, "exist_ok": True},
    )
    assert calls["upload"]["folder_path"] == str(out) and calls["upload"]["repo_type"] == "dataset"
    assert "hf_saved_login_token" not in stdout + err
    # the environment variable wins over the saved login, as in huggingface_hub
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    code, stdout, err = run_cli(["push", str(out), "--repo_id", "org/toy"])
    assert code == 0 and calls["token"] == "hf_secret_value" and "hf_secret_value" not in stdout + err
    code, _, err = run_cli(["push", str(tmp_path), "--repo_id", "org/toy"])
    assert code == 2 and "no README.md dataset card" in err
    # a folder that is not there, or a file, says so instead of asking for its card
    code, _, err = run_cli(["push", str(tmp_path / "nowhere"), "--repo_id", "org/toy"])
    assert code == 2 and "nowhere: no such folder" in err and "README" not in err
    (tmp_path / "a_file").write_text("x")
    code, _, err = run_cli(["push", str(tmp_path / "a_file"), "--repo_id", "org/toy"])
    assert code == 2 and "a_file: is a file, not a folder" in err
