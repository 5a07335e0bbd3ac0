"""`audioeval.load_dataset("<benchmark>", config)` by name, in a fresh interpreter with the Hub unreachable
(offline mode, and a refused network without offline mode), in a folder without data files; the rows equal
`audioeval build` output for the same arguments. `import audioeval` leaves `datasets` as it is (no private
patching), so `datasets.load_dataset` reads built folders and the Hub with `datasets` alone; a missing config
name is refused with the list of configs either way."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.alice_testutil import isolated_cache, write_layout  # noqa: F401
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import hashlib, json, socket, sys
mode, osps, alice, cache = sys.argv[1:5]
if mode == "refused":  # no offline switch, but every connection attempt fails
    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")
    socket.socket.connect = refuse
    socket.create_connection = refuse
import audioeval
light = not any(m in sys.modules for m in ("datasets", "torch", "numpy"))

def digest(rows):
    def default(value):
        return hashlib.sha256(value).hexdigest() if isinstance(value, bytes) else str(value)
    return hashlib.sha256(json.dumps(rows, default=default, sort_keys=True).encode()).hexdigest()

out = {"light_import": light}
ds = audioeval.load_dataset("audioicl_bench", "audio_count", split="test", n_episodes=2, seed=5, max_shots=2,
                            osps_dir=osps, cache_dir=cache)
out["audioicl"] = digest(ds.data.table.to_pylist())
out["audioicl_source"] = json.loads(ds[0]["metadata"])["sound"]["source"]
if mode == "offline":
    from audioeval.data.builders import load_builder_class
    cls = load_builder_class("audioicl_bench")
    made, original = [], cls.episode
    def counting(self, index):
        made.append(index)
        return original(self, index)
    cls.episode = counting
    stream = audioeval.load_dataset("audioicl_bench", "morse_letter", split="test", n_episodes=500, streaming=True)
    first = next(iter(stream))
    out["stream"] = {"type": type(stream).__name__, "first": first["id"], "made": made}
    alice_ds = audioeval.load_dataset("alice", "ser_ceq", split="test", data_dir=alice, max_shots=2,
                                      check_audio=False, cache_dir=cache)
    out["alice"] = digest(alice_ds.data.table.to_pylist())
    adu = audioeval.load_dataset("adu_bench", "general", split="test", n_episodes=1, cache_dir=cache)
    out["adu"] = digest(adu.data.table.to_pylist())
    try:
        audioeval.load_dataset("adu_bench")
    except audioeval.errors.UsageError as err:
        out["no_config"] = str(err)
print("RESULT " + json.dumps(out))
"""


def _digest(rows):
    def default(value):
        return hashlib.sha256(value).hexdigest() if isinstance(value, bytes) else str(value)

    return hashlib.sha256(json.dumps(rows, default=default, sort_keys=True).encode()).hexdigest()


def _built(folder: Path, config: str) -> str:
    files = sorted((folder / config).glob("*.parquet"))
    return _digest([row for f in files for row in pq.read_table(f).to_pylist()])


def _audio_count_build(osps: Path, tmp_path: Path) -> str:
    """The digest of `audioeval build` rows for the arguments the script passes to load_dataset."""
    built = tmp_path / "built"
    args = ["--n_episodes", "2", "--seed", "5", "--max_shots", "2", "--builder_args", f"osps_dir={osps}"]
    code, _, err = run_cli(
        ["build", "audioicl_bench", "--output_dir", str(built), "--configs", "audio_count", *args]
    )
    assert code == 0, err
    return _built(built, "audio_count")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    from tests.alice_testutil import tone_wav

    root = tmp_path_factory.mktemp("sources")
    osps = root / "osps"
    for i, freq in enumerate((180.0, 260.0, 340.0)):
        tone_wav(osps / str(i + 1) / f"{i}.wav", freq, seconds=0.2)
    alice = write_layout(root / "alice")
    return osps, alice


def _run(mode: str, osps: Path, alice: Path, tmp_path: Path) -> dict:
    workdir = tmp_path / f"empty-{mode}"  # no data files here: the name must not be resolved as a folder
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["HF_HOME"] = str(tmp_path / "hf_home")  # no cached copy of anything
    if mode == "offline":
        env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(osps), str(alice), str(tmp_path / f"cache-{mode}")],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.mark.slow
def test_load_by_name_offline_equals_audioeval_build(sources, tmp_path):
    osps, alice = sources
    result = _run("offline", osps, alice, tmp_path)
    assert result["light_import"]  # `import audioeval` imported neither datasets, torch nor numpy

    assert result["audioicl"] == _audio_count_build(osps, tmp_path)
    assert result["audioicl_source"] == "osps"  # the source folder passed through as a builder kwarg

    # streaming generates episodes as they are read: the first row cost one episode out of 500
    assert result["stream"] == {"type": "IterableDataset", "first": "morse_letter-00000", "made": [0]}

    alice_built = tmp_path / "alice_built"
    alice_args = ["--max_shots", "2", "--builder_args", f"data_dir={alice},check_audio=false"]
    assert (
        run_cli(["build", "alice", "--output_dir", str(alice_built), "--configs", "ser_ceq", *alice_args])[0]
        == 0
    )
    assert result["alice"] == _built(alice_built, "ser_ceq")

    adu_built = tmp_path / "adu_built"
    assert (
        run_cli(
            [
                "build",
                "adu_bench",
                "--output_dir",
                str(adu_built),
                "--configs",
                "general",
                "--n_episodes",
                "1",
            ]
        )[0]
        == 0
    )
    assert result["adu"] == _built(adu_built, "general")
    assert result["no_config"] == (
        "adu_bench: a config name is missing; pick one of the available configs: general, skill, multilingual, "
        "ambiguity (e.g. audioeval.load_dataset('adu_bench', 'general'))."
    )


@pytest.mark.slow
def test_load_by_name_with_the_network_refused_and_no_offline_switch(sources, tmp_path):
    osps, alice = sources
    result = _run("refused", osps, alice, tmp_path)
    assert result["audioicl"] == _audio_count_build(osps, tmp_path)


def test_import_audioeval_leaves_datasets_as_it_is_and_a_built_folder_loads_with_datasets(
    tmp_path, monkeypatch
):
    """No private patching: after `import audioeval`, `datasets` resolves names as it always does, so a folder
    built under a benchmark's name is read as the folder; a bare name without a folder is not answered by
    audioeval (it goes to the Hub: `audioeval.load_dataset` is the way to load by name)."""
    import datasets
    from datasets import load

    import audioeval  # noqa: F401 - what must leave datasets alone

    assert not hasattr(load.dataset_module_factory, "__wrapped__")
    ours = [f for f in sys.meta_path if type(f).__module__.startswith("audioeval")]
    assert all(f.find_spec("datasets.load", None) is None for f in ours)  # nothing of audioeval's takes it
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="audioicl_bench"):  # offline: no Hub to ask, and no folder
        datasets.load_dataset("audioicl_bench", "morse_letter", split="test")
    code, _, err = run_cli(
        ["build", "audioicl_bench", "--configs", "morse_letter,audio_count", "--n_episodes", "2"]
    )
    assert code == 0, err
    ds = datasets.load_dataset("audioicl_bench", "morse_letter", split="test", cache_dir=str(tmp_path / "c"))
    assert len(ds) == 2  # the folder's two rows, not the builder's default 300


def test_a_missing_config_name_is_refused_with_the_list_by_name_and_from_a_built_folder(
    tmp_path, monkeypatch
):
    """One rule for both ways: a benchmark has several configs, so the config must be named."""
    import datasets

    import audioeval
    from audioeval.errors import UsageError

    with pytest.raises(
        UsageError, match="a config name is missing; pick one of the available configs: audio_count, "
    ):
        audioeval.load_dataset("audioicl_bench", n_episodes=1)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(
        ["build", "audioicl_bench", "--configs", "morse_letter,audio_count", "--n_episodes", "1"]
    )
    assert code == 0, err
    with pytest.raises(ValueError, match=r"(?s)Config name is missing.*morse_letter"):
        datasets.load_dataset("audioicl_bench", cache_dir=str(tmp_path / "c"))


def test_the_datasets_requirement_holds_the_installed_release_and_has_no_upper_bound():
    """audioeval uses `datasets`' public API only, so no upper bound is set; the lower bound is the oldest
    release the tests ran on."""
    import re

    import datasets
    from packaging.specifiers import SpecifierSet

    spec = re.search(r'"datasets([^"]*)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert "<" not in spec and datasets.__version__ in SpecifierSet(spec)
