"""`audioeval build <benchmark>` without --output_dir writes ./<benchmark>/, and the line the mission gives,
`load_dataset("<benchmark>", config)`, then works in that folder in a fresh interpreter that never imports
audioeval (datasets loads a local folder of that name)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import run_cli

LITERAL = (
    'import sys; from datasets import load_dataset; ds = load_dataset("audioicl_bench", "audio_count"); '
    'print(ds["test"].num_rows, ds["test"][0]["query"]["label"] is not None, "audioeval" in sys.modules)'
)


@pytest.mark.slow
def test_build_without_output_dir_writes_a_folder_load_dataset_finds_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["build", "audioicl_bench", "--configs", "audio_count", "--n_episodes", "2"])
    assert code == 0, err
    assert (tmp_path / "audioicl_bench" / "README.md").is_file()
    assert (tmp_path / "audioicl_bench" / "audio_count").is_dir()
    assert 'load it: from datasets import load_dataset; load_dataset("audioicl_bench", "audio_count")' in out
    # a fresh interpreter that never imports audioeval, offline: only the folder can answer
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    done = subprocess.run(
        [sys.executable, "-c", LITERAL],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "True", "False"]


def test_build_into_an_existing_default_folder_needs_overwrite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "audioicl_bench").mkdir()
    (tmp_path / "audioicl_bench" / "notes.txt").write_text("mine")
    code, _, err = run_cli(["build", "audioicl_bench", "--configs", "audio_count", "--n_episodes", "1"])
    assert code == 2 and "exists and is not empty" in err and "--overwrite" in err
    assert (tmp_path / "audioicl_bench" / "notes.txt").read_text() == "mine"
