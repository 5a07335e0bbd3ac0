"""The AudioICL-Bench builder: reproducibility, nesting across k, limits and validation before generation."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from audioeval.benchmarks.audioicl_bench.common import TASK_IDS
from audioeval.data.builders import load_builder_class, make_builder
from audioeval.errors import ConfigError, DataError

CONFIGS = list(TASK_IDS)
SMALL = {"anomaly_seconds": 2.0}


def builder(config: str, **kwargs):
    return make_builder("audioicl_bench", config, {**SMALL, **kwargs})


def row_digest(b, episode: dict) -> str:
    """SHA-256 of the serialised Hub row: every clip's WAV bytes, labels, fields and metadata."""
    row = b.to_row(episode)

    def encode(obj):
        if isinstance(obj, bytes):
            return hashlib.sha256(obj).hexdigest()
        if isinstance(obj, dict):
            return {k: encode(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [encode(v) for v in obj]
        return obj

    return hashlib.sha256(json.dumps(encode(row), sort_keys=True).encode()).hexdigest()


def test_every_config_is_registered_with_a_stable_id():
    cls = load_builder_class("audioicl_bench")
    assert [c.name for c in cls.BUILDER_CONFIGS] == CONFIGS
    assert len(set(TASK_IDS.values())) == len(TASK_IDS)


@pytest.mark.slow
def test_episode_alone_in_a_fresh_process_equals_episode_from_a_full_run(tmp_path):
    """Episode 7 generated alone, in a new process with empty in-memory caches, has the same bytes as
    episode 7 of a sequential run over all 8 episodes."""
    full = {}
    for config in CONFIGS:
        b = builder(config, n_episodes=8, max_shots=3)
        rows = [row_digest(b, b.episode(i)) for i in range(8)]
        full[config] = rows[7]
        assert len(set(rows)) == 8, f"{config}: episodes repeat"
    script = tmp_path / "alone.py"
    script.write_text(
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_audioicl_builder import builder, row_digest, CONFIGS\n"
        "out = {}\n"
        "for c in CONFIGS:\n"
        "    b = builder(c, n_episodes=8, max_shots=3)\n"
        "    out[c] = row_digest(b, b.episode(7))\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == full


def test_seed_changes_the_episodes():
    a = builder("audio_count", seed=0, n_episodes=2)
    b = builder("audio_count", seed=1, n_episodes=2)
    assert row_digest(a, a.episode(0)) != row_digest(b, b.episode(0))


@pytest.mark.parametrize("config", CONFIGS)
def test_demos_are_nested_across_k_and_max_shots(config):
    """The k-shot prompt uses the first k demos; an episode built with fewer demos is a prefix of one built
    with more, with the same query and context."""
    small, large = builder(config, max_shots=2), builder(config, max_shots=5)
    for index in (0, 3):
        a, b = small.episode(index), large.episode(index)
        assert len(a["demos"]) == 2 and len(b["demos"]) == 5
        ra, rb = small.to_row(a), large.to_row(b)
        assert ra["demos"] == rb["demos"][:2]
        assert ra["query"] == rb["query"] and ra["context"] == rb["context"]


@pytest.mark.parametrize(
    "config,limit",
    [
        ("audio_count", 7),
        ("audio_count_hard", 7),
        ("audio_operator", 7),
        ("audio_operator_hard", 7),
        ("audio_remap", 6),
        ("morse_letter", 25),
        ("morse_code", 625),
        ("audio_length", None),
        ("anomaly_detect", None),
    ],
)
def test_max_supported_shots(config, limit):
    assert builder(config).max_supported_shots() == limit


@pytest.mark.parametrize(
    "config,shots,reason",
    [
        ("audio_count", 8, "distinct counts from 1..8"),
        ("audio_operator", 8, "without replacement from the episode's 8 expressions"),
        ("audio_remap", 7, "distinct patterns out of the 6 (AAB"),
        ("morse_letter", 26, "distinct letters"),
    ],
)
def test_too_many_shots_is_rejected_with_the_limit_and_why(config, shots, reason):
    with pytest.raises(ConfigError) as err:
        builder(config, max_shots=shots)
    assert f"max_shots={shots}" in str(err.value) and reason in str(err.value) and "at most" in str(err.value)


def test_unknown_config_and_unknown_argument_are_rejected():
    with pytest.raises(ConfigError, match="unknown builder config 'audio_cont'.*audio_count"):
        make_builder("audioicl_bench", "audio_cont", {})
    with pytest.raises(ConfigError, match="morse_wmp.*morse_wpm"):
        make_builder("audioicl_bench", "morse_code", {"morse_wmp": 20})


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"n_episodes": 0}, "n_episodes"),
        ({"max_shots": -1}, "max_shots"),
        ({"sampling_rate": 96000}, "sampling_rate"),
        ({"morse_wpm": 0.5}, "morse_wpm"),
        ({"morse_tone_hz": 7900.0}, "morse_tone_hz"),
        ({"anomaly_strength_db": float("nan")}, "anomaly_strength_db"),
        ({"distractor_snr_min_db": 20.0}, "distractor_snr_min_db"),
    ],
)
def test_bad_numbers_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        builder("audio_count", **kwargs)


def test_other_sampling_rates_work():
    ep = builder("morse_letter", sampling_rate=22050, max_shots=1).episode(0)
    assert ep["query"]["clips"][0]["audio"].sampling_rate == 22050


def test_word_list_errors_and_custom_list(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\nwor1d\n")
    with pytest.raises(DataError, match=r"bad.txt:2: 'wor1d'"):
        builder("morse_code", word_list=str(bad))
    with pytest.raises(DataError, match="cannot read"):
        builder("morse_code", word_list=str(tmp_path / "missing.txt"))
    good = tmp_path / "words.txt"
    good.write_text("# mine\nsun\nmoon\nstar\nsky\n")
    b = builder("morse_code", word_list=str(good), max_shots=3)
    assert b.max_supported_shots() == 3
    ep = b.episode(0)
    assert {ep["query"]["label"], *(d["label"] for d in ep["demos"])} == {"sun", "moon", "star", "sky"}
    with pytest.raises(ConfigError, match="4-word list"):
        builder("morse_code", word_list=str(good), max_shots=4)


def test_shipped_word_list_is_five_letter_words():
    path = Path(__file__).resolve().parents[3] / "datasets_builders" / "audioicl_bench" / "words5.txt"
    words = [w for w in path.read_text().split("\n") if w and not w.startswith("#")]
    assert len(words) >= 300 and len(set(words)) == len(words)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in words)


# ---- real corpora: layout checks and generation from local folders ---------------------------------------------


def _wav(path: Path, seconds: float = 0.3, rate: int = 16000, freq: float = 440.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    soundfile.write(str(path), 0.5 * np.sin(2 * np.pi * freq * t) * np.exp(-t / 0.1), rate, subtype="PCM_16")


@pytest.fixture()
def corpora(tmp_path):
    osps = tmp_path / "osps"
    for i in range(6):
        _wav(osps / str(1 + i % 5) / f"{100 + i}.wav", 0.2 + 0.05 * i, 44100, 300 + 150 * i)
    fsdd = tmp_path / "fsdd"
    for d in range(10):
        for take in range(2):
            _wav(fsdd / "recordings" / f"{d}_jackson_{take}.wav", 0.35, 8000, 200 + 40 * d)
    esc = tmp_path / "esc50"
    for target in (0, 10, 20):
        _wav(esc / "audio" / f"1-{1000 + target}-A-{target}.wav", 5.0, 44100, 800)
    dcase = tmp_path / "dcase"
    for machine in ("fan", "valve"):
        for i in range(4):
            _wav(dcase / machine / "train" / f"section_00_source_train_normal_{i:04d}_a.wav", 1.0)
            _wav(dcase / machine / "test" / f"section_00_source_test_anomaly_{i:04d}_a.wav", 1.0, freq=900)
        _wav(dcase / machine / "test" / "section_00_source_test_normal_0000_a.wav", 1.0)
    return {"osps_dir": osps, "fsdd_dir": fsdd, "esc50_dir": esc, "dcase_dir": dcase}


def test_episodes_from_local_corpora(corpora):
    dirs = {k: str(v) for k, v in corpora.items()}
    ep = builder("audio_count_hard", max_shots=2, **dirs).episode(0)
    assert ep["metadata"]["sound"]["source"] == "osps"
    assert ep["query"]["distractor"]["source"] == "esc50" and ep["query"]["distractor"]["file"].endswith(
        ("-0.wav", "-10.wav")
    )
    ep = builder("audio_operator", max_shots=2, **dirs).episode(1)
    assert ep["metadata"]["voice"] == {"source": "fsdd", "speaker": "jackson"}
    assert all(s["source"] == "fsdd" for s in ep["query"]["spoken"])
    b = builder("anomaly_detect", max_shots=3, **dirs)
    assert b.max_supported_shots() == 3
    ep = b.episode(2)
    assert ep["metadata"]["machine"] in ("fan", "valve")
    files = [r["file"] for d in ep["demos"] for r in d["recordings"]] + [ep["query"]["recordings"][0]["file"]]
    assert len(set(files)) == len(files) and all(f.startswith(ep["metadata"]["machine"] + "/") for f in files)
    for demo in ep["demos"]:
        normal, anomalous = demo["recordings"]
        assert (
            "_normal_" in normal["file"]
            and "/test/" in anomalous["file"]
            and "_anomaly_" in anomalous["file"]
        )
    with pytest.raises(ConfigError, match="machine 'fan' has 5 normal and 4 anomalous files"):
        builder("anomaly_detect", max_shots=4, **dirs)


def test_missing_corpus_folder_is_named():
    with pytest.raises(DataError, match=r"osps_dir=/no/such/osps: no such folder"):
        builder("audio_count", osps_dir="/no/such/osps")


def test_corpus_not_used_by_the_config_is_ignored():
    builder("morse_letter", dcase_dir="/no/such/dir")


def test_unreadable_corpus_file_is_named_before_generation(corpora):
    broken = corpora["osps_dir"] / "3" / "999.wav"
    broken.write_bytes(b"RIFF....not audio")
    with pytest.raises(DataError, match=r"osps_dir: 1 unreadable audio file\(s\): .*999.wav"):
        builder("audio_remap", osps_dir=str(corpora["osps_dir"]))


def test_corpus_layout_errors_say_what_is_missing(corpora):
    with pytest.raises(
        DataError, match=r"no recordings .*<digit>_alice_<take>.wav .*Speakers found: jackson"
    ):
        builder("audio_operator", fsdd_dir=str(corpora["fsdd_dir"]), fsdd_speaker="alice")
    (corpora["fsdd_dir"] / "recordings" / "7_jackson_0.wav").unlink()
    (corpora["fsdd_dir"] / "recordings" / "7_jackson_1.wav").unlink()
    with pytest.raises(DataError, match=r"for digit\(s\) 7"):
        builder("audio_operator_hard", fsdd_dir=str(corpora["fsdd_dir"]))
    with pytest.raises(DataError, match="no audio/ folder"):
        builder("audio_count_hard", esc50_dir=str(corpora["osps_dir"]))
    for p in (corpora["dcase_dir"] / "valve" / "test").glob("*anomaly*"):
        p.unlink()
    with pytest.raises(DataError, match="valve lack normal or anomalous recordings"):
        builder("anomaly_detect", dcase_dir=str(corpora["dcase_dir"]))
    builder("anomaly_detect", dcase_dir=str(corpora["dcase_dir"]), dcase_machines="fan", max_shots=3)
    with pytest.raises(DataError, match="no machine folder"):
        builder("anomaly_detect", dcase_dir=str(corpora["dcase_dir"]), dcase_machines="pump")
