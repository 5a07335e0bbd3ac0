"""`datasets.load_dataset("<benchmark>", config)` by name after `import audioeval`, in a fresh interpreter with
the Hub unreachable (offline mode, and a refused network without offline mode), in a folder without data files;
the rows equal `audioeval build` output for the same arguments."""

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
import datasets

def digest(rows):
    def default(value):
        return hashlib.sha256(value).hexdigest() if isinstance(value, bytes) else str(value)
    return hashlib.sha256(json.dumps(rows, default=default, sort_keys=True).encode()).hexdigest()

out = {"light_import": light}
ds = datasets.load_dataset("audioicl_bench", "audio_count", split="test", n_episodes=2, seed=5, max_shots=2,
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
    stream = datasets.load_dataset("audioicl_bench", "morse_letter", split="test", n_episodes=500, streaming=True)
    first = next(iter(stream))
    out["stream"] = {"type": type(stream).__name__, "first": first["id"], "made": made}
    alice_ds = datasets.load_dataset("alice", "ser_ceq", split="test", data_dir=alice, max_shots=2,
                                     check_audio=False, cache_dir=cache)
    out["alice"] = digest(alice_ds.data.table.to_pylist())
    adu = datasets.load_dataset("adu_bench", "general", split="test", n_episodes=1, cache_dir=cache)
    out["adu"] = digest(adu.data.table.to_pylist())
    out["configs"] = datasets.get_dataset_config_names("adu_bench")
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
    assert result["configs"] == ["general", "skill", "multilingual", "ambiguity"]


@pytest.mark.slow
def test_load_by_name_with_the_network_refused_and_no_offline_switch(sources, tmp_path):
    osps, alice = sources
    result = _run("refused", osps, alice, tmp_path)
    assert result["audioicl"] == _audio_count_build(osps, tmp_path)


def test_a_folder_named_like_a_benchmark_keeps_its_meaning(tmp_path, monkeypatch):
    """Only a bare benchmark name is answered by audioeval; a folder the user built under that name is read as
    the folder, as it was before audioeval was imported."""
    import datasets

    import audioeval  # noqa: F401 - wires the names up

    folder = tmp_path / "audioicl_bench"
    code, _, err = run_cli(
        [
            "build",
            "audioicl_bench",
            "--output_dir",
            str(folder),
            "--configs",
            "morse_letter",
            "--n_episodes",
            "2",
        ]
    )
    assert code == 0, err
    monkeypatch.chdir(tmp_path)
    ds = datasets.load_dataset("audioicl_bench", "morse_letter", split="test", cache_dir=str(tmp_path / "c"))
    assert len(ds) == 2  # the folder's two rows, not the builder's default 300


def test_the_pinned_datasets_range_holds_the_installed_version():
    """The by-name hook uses `datasets` internals: pyproject pins the versions it was tested on."""
    import re

    import datasets
    from packaging.specifiers import SpecifierSet

    text = (ROOT / "pyproject.toml").read_text()
    spec = re.search(r'"datasets([^"]*)"', text).group(1)
    assert "<" in spec, "the datasets requirement must have an upper bound"
    assert datasets.__version__ in SpecifierSet(spec)
    from datasets import load

    assert getattr(load.dataset_module_factory, "_audioeval_by_name", False)


def test_the_by_name_hook_was_tested_on_every_release_of_the_pinned_range():
    """by_name.py patches `datasets.load.dataset_module_factory`: the installed release must be one it lists as
    tested, every listed release must lie in the pin, and the function it wraps must still take the dataset's
    name (or path) first, which is all the wrapper reads."""
    import inspect
    import re

    import datasets
    from datasets import load
    from packaging.specifiers import SpecifierSet

    from audioeval.data.by_name import TESTED_DATASETS

    spec = SpecifierSet(re.search(r'"datasets([^"]*)"', (ROOT / "pyproject.toml").read_text()).group(1))
    assert datasets.__version__ in TESTED_DATASETS, (
        f"datasets {datasets.__version__} is not among the releases by_name.py was tested on {TESTED_DATASETS}"
    )
    assert all(version in spec for version in TESTED_DATASETS)
    original = inspect.unwrap(load.dataset_module_factory)
    assert original is not load.dataset_module_factory  # the hook is installed, and wraps the original
    assert next(iter(inspect.signature(original).parameters)) == "path"
