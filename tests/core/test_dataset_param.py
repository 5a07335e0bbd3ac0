"""`--task_args dataset=DIR_or_org/name`: evaluating from a built folder or a Hub dataset gives the results of a
synthesized run with the same seed, records the revision it read, and rejects data that is not a build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import pytest

from audioeval.data.stored import content_digest
from tests.alice_testutil import isolated_cache, write_layout  # noqa: F401
from tests.conftest import TOY, latest_run, load_results, load_samples, run_cli

BUILDER = str(TOY / "toy_tones.py")
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def toy_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("toy") / "toy_hub"
    code, _, err = run_cli(["build", BUILDER, "--output_dir", str(out), "--n_episodes", "6", "--seed", "3"])
    assert code == 0, err
    return out


def _run(tmp_path: Path, name: str, tasks: str, model: str, task_args: str, *extra: str) -> tuple[Path, str]:
    out = tmp_path / name
    args = ["--tasks", tasks, "--model", model, "--task_args", task_args, "--output_path", str(out)]
    code, _, err = run_cli([*args, "--no_cache", "--log_samples", "--bootstrap_iters", "200", *extra])
    assert code == 0, err
    return latest_run(out), err


def _same_run(a: Path, b: Path, task: str) -> None:
    assert load_results(a)["results"] == load_results(b)["results"]
    assert load_samples(a, task) == load_samples(b, task)


@pytest.mark.slow
def test_a_built_folder_gives_the_synthesized_results_and_records_its_content_hash(toy_build, tmp_path):
    toy = ["--include_path", str(TOY), "--seed", "3"]
    synthesized, _ = _run(tmp_path, "synth", "toy_tones", "knn-icl", "n_episodes=6", *toy)
    stored, err = _run(tmp_path, "stored", "toy_tones", "knn-icl", f"dataset={toy_build},n_episodes=50", *toy)
    _same_run(synthesized, stored, "toy_tones")
    assert (
        "n_episodes set with dataset=" in err and "ignored" in err
    )  # the stored rows decide, with a warning
    record = load_results(stored)["configs"]["toy_tones"]["dataset"]
    files = [toy_build / "README.md", *sorted((toy_build / "tones").glob("*.parquet"))]
    assert record["kind"] == "local" and record["sha256"] == content_digest(toy_build, files)
    assert record["files"] == ["README.md", "tones/test-00000-of-00001.parquet"]
    assert (record["config"], record["split"], record["rows"]) == ("tones", "test", 6)
    assert record["generation"]["seed"] == 3 and record["generation"]["n_episodes"] == 6
    assert "dataset" not in load_results(synthesized)["configs"]["toy_tones"]

    # the viewer rebuilds a run's clips from the same stored rows (sha256 checked per clip)
    from audioeval.results.run_files import read_run
    from audioeval.viewer.regenerate import RunAudio

    sample = load_samples(stored, "toy_tones")[0]
    clip = next(part for m in sample["messages"] for part in m["content"] if part["type"] == "audio")
    audio = RunAudio(read_run(stored).record.configs, trust_builder_files=True)
    assert audio.wav("toy_tones", sample["episode"], clip["sha256"]) is not None


@pytest.mark.slow
def test_audioicl_from_a_built_folder_equals_the_synthesized_run(tmp_path):
    built = tmp_path / "icl_hub"
    code, _, err = run_cli(
        [
            "build",
            "audioicl_bench",
            "--output_dir",
            str(built),
            "--configs",
            "morse_letter,audio_remap",
            "--n_episodes",
            "3",
            "--seed",
            "1",
            "--max_shots",
            "3",
        ]
    )
    assert code == 0, err
    tasks = "audioicl_morse_letter,audioicl_audio_remap"
    common = ["--seed", "1", "--num_fewshot", "0,1,3"]
    synthesized, _ = _run(tmp_path, "synth", tasks, "knn-icl", "n_episodes=3,max_shots=3", *common)
    stored, _ = _run(tmp_path, "stored", tasks, "knn-icl", f"dataset={built}", *common)
    for task in tasks.split(","):
        _same_run(synthesized, stored, task)


@pytest.mark.slow
def test_alice_from_a_built_folder_reads_demonstration_audio_from_the_pool_config(tmp_path):
    copy = write_layout(tmp_path / "alice_copy")
    built = tmp_path / "alice_hub"
    code, _, err = run_cli(
        [
            "build",
            "alice",
            "--output_dir",
            str(built),
            "--configs",
            "ser_ceq,demo_pool",
            "--max_shots",
            "2",
            "--builder_args",
            f"data_dir={copy},check_audio=false",
        ]
    )
    assert code == 0, err
    common = ["--num_fewshot", "0,1,2"]
    synth_args = f"data_dir={copy},max_shots=2,check_audio=false"
    synthesized, _ = _run(tmp_path, "synth", "alice_s1_ser_ceq", "demo-majority", synth_args, *common)
    stored, _ = _run(tmp_path, "stored", "alice_s1_ser_ceq", "demo-majority", f"dataset={built}", *common)
    _same_run(synthesized, stored, "alice_s1_ser_ceq")


def _hub_cache(root: Path, build: Path, repo: str = "org/toy") -> Path:
    """The Hugging Face cache layout huggingface_hub itself reads offline: refs/main -> a snapshot folder."""
    repo_dir = root / ("datasets--" + repo.replace("/", "--"))
    shutil.copytree(build, repo_dir / "snapshots" / SHA)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(SHA)
    return root


@pytest.mark.slow
def test_a_hub_dataset_is_read_from_the_cache_offline_and_its_commit_recorded(
    toy_build, tmp_path, monkeypatch
):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(_hub_cache(tmp_path / "hub_cache", toy_build)))
    toy = ["--include_path", str(TOY), "--seed", "3"]
    local, _ = _run(tmp_path, "local", "toy_tones", "knn-icl", f"dataset={toy_build}", *toy)
    for spec in ("org/toy", f"org/toy@{SHA}"):
        hub, _ = _run(tmp_path, spec.replace("/", "_"), "toy_tones", "knn-icl", f"dataset={spec}", *toy)
        _same_run(local, hub, "toy_tones")
        record = load_results(hub)["configs"]["toy_tones"]["dataset"]
        assert record["kind"] == "hub" and record["repo_id"] == "org/toy" and record["revision"] == SHA
    code, _, err = run_cli(
        [
            "--include_path",
            str(TOY),
            "--tasks",
            "toy_tones",
            "--model",
            "chance",
            "--task_args",
            "dataset=org/elsewhere",
        ]
    )
    assert code == 2 and "not in the local Hugging Face cache" in err
    assert "`hf download org/elsewhere --repo-type dataset`" in err and "HF_HUB_OFFLINE=1" in err


def _fails(task_args: str, tasks: str = "toy_tones") -> str:
    code, _, err = run_cli(
        ["--include_path", str(TOY), "--tasks", tasks, "--model", "chance", "--task_args", task_args]
    )
    assert code == 2, err
    return err


@pytest.mark.slow
def test_bad_datasets_are_named_with_what_is_missing(toy_build, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _fails("dataset=audioicl_bnch", "audioicl_morse_letter")
    assert "unknown dataset 'audioicl_bnch'" in err and "audioicl_bench" in err

    empty = tmp_path / "not_a_build"
    empty.mkdir()
    (empty / "rows.parquet").write_bytes(b"")
    assert "no README.md dataset card" in _fails(f"dataset={empty}")

    no_configs = tmp_path / "no_configs"
    no_configs.mkdir()
    (no_configs / "README.md").write_text("---\nlicense: mit\n---\n# rows\n")
    assert "declares no `configs:`" in _fails(f"dataset={no_configs}")

    other_config = tmp_path / "other_config"
    shutil.copytree(toy_build, other_config)
    card = other_config / "README.md"
    card.write_text(card.read_text().replace("config_name: tones", "config_name: beeps"))
    err = _fails(f"dataset={other_config}")
    assert "unknown config" in err and "'tones'" in err and "beeps" in err

    other_features = tmp_path / "other_features"
    shutil.copytree(toy_build, other_features)
    parquet = next((other_features / "tones").glob("*.parquet"))
    datasets.Dataset.from_dict({"id": ["a"], "index": [0], "text": ["hello"]}).to_parquet(str(parquet))
    err = _fails(f"dataset={other_features}")
    assert "field `context` (list) is missing" in err and parquet.name in err

    truncated = tmp_path / "truncated"
    shutil.copytree(toy_build, truncated)
    parquet = next((truncated / "tones").glob("*.parquet"))
    parquet.write_bytes(parquet.read_bytes()[: parquet.stat().st_size // 2])
    err = _fails(f"dataset={truncated}")
    assert f"{parquet}: not a readable parquet file" in err and "Traceback" not in err

    other_benchmark = tmp_path / "other_benchmark"
    shutil.copytree(toy_build, other_benchmark)
    card = other_benchmark / "README.md"
    card.write_text(card.read_text().replace("benchmark: toy_tones", "benchmark: adu_bench"))
    assert "holds episodes of 'adu_bench'" in _fails(f"dataset={other_benchmark}")


@pytest.mark.slow
def test_a_careless_dataset_value_says_what_it_is_not(toy_build, tmp_path, monkeypatch):
    """Empty, a path to nothing, a file, another benchmark's name: each one line saying which, never a run
    that silently generates or a list of unrelated folders."""
    monkeypatch.chdir(tmp_path)
    err = _fails("dataset=")
    assert "--task_args dataset= is empty" in err
    assert "no such folder" in _fails("dataset=./nowhere")
    err = _fails(f"dataset={toy_build.parent / 'toy_hb'}")
    assert f"no such folder (did you mean {toy_build}?)" in err
    assert f"no such folder (nor is there a folder {tmp_path / 'gone'})" in _fails(
        f"dataset={tmp_path / 'gone' / 'deeper'}"
    )
    a_file = tmp_path / "rows.txt"
    a_file.write_text("not a dataset")
    assert "rows.txt: this is a file, not a folder" in _fails(f"dataset={a_file}")
    err = _fails("dataset=adu_bench")
    assert "dataset=adu_bench: that is another benchmark; this task's episodes are toy_tones's" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_the_benchmark_name_means_generating_the_episodes(tmp_path):
    toy = ["--include_path", str(TOY), "--seed", "3", "--limit", "3"]
    synthesized, _ = _run(tmp_path, "synth", "toy_tones", "chance", "n_episodes=6", *toy)
    named, _ = _run(tmp_path, "named", "toy_tones", "chance", "dataset=toy_tones,n_episodes=6", *toy)
    assert load_results(synthesized)["results"] == load_results(named)["results"]
    assert "dataset" not in load_results(named)["configs"]["toy_tones"]
    assert json.loads(json.dumps(load_results(named)["task_args"])) == {
        "dataset": "toy_tones",
        "n_episodes": 6,
    }
