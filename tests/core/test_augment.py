"""--augment building blocks: flag parsing and its errors, seeding independent of any global generator,
the SNR actually delivered, which clips a target degrades, and that a degraded request differs from the
clean one in its audio only."""

from __future__ import annotations

import random
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from audioeval.audio.wav import quantize
from audioeval.augment.catalogue import TRANSFORMS
from audioeval.augment.episode import augment_episode, on_grid
from audioeval.augment.noises import measured_snr_db
from audioeval.augment.plan import Condition, parse_augment
from audioeval.data.builders import make_builder
from audioeval.errors import UsageError
from audioeval.results.robustness import paired_drop
from audioeval.results.stats import Aggregation
from tests.conftest import TOY, run_cli

TOY_BUILDER = str(TOY / "toy_tones.py")

# one level per transform; room_rt60 and mp3_kbps need their optional packages (installed with the dev extra)
ONE_LEVEL = {
    "noise_snr": "10",
    "pink_noise_snr": "10",
    "brown_noise_snr": "10",
    "babble_snr": "5",
    "env_noise_snr": "5",
    "reverb_rt60": "0.6",
    "room_rt60": "0.4",
    "telephone": None,
    "lowpass_hz": "1000",
    "gain_db": "12",
    "clip_percent": "20",
    "pitch_semitones": "2",
    "time_stretch_rate": "1.25",
    "mp3_kbps": "32",
    "time_mask_fraction": "0.3",
}


def _flag(name: str) -> str:
    return name if ONE_LEVEL[name] is None else f"{name}={ONE_LEVEL[name]}"


def _condition(flag: str, target: str = "all") -> Condition:
    plan = parse_augment([flag], target)
    assert plan is not None
    return plan.conditions[0]


@pytest.fixture(scope="module")
def toy():
    return make_builder(TOY_BUILDER, "tones", {"n_episodes": 4, "seconds": 0.5})


def _shas(episode: dict) -> dict[str, str]:
    out = {f"context/{i}": c["audio"].sha256 for i, c in enumerate(episode["context"])}
    for d, demo in enumerate(episode["demos"]):
        out.update({f"demos/{d}/{i}": c["audio"].sha256 for i, c in enumerate(demo["clips"])})
    out.update({f"query/{i}": c["audio"].sha256 for i, c in enumerate(episode["query"]["clips"])})
    return out


def test_catalogue_covers_every_transform_in_the_tests():
    assert set(ONE_LEVEL) == set(TRANSFORMS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ONE_LEVEL))
def test_every_transform_is_seeded_by_the_clip_and_leaves_global_generators_alone(toy, name):
    condition = _condition(_flag(name))
    episode = toy.episode(0)
    random.seed(1)
    np.random.seed(1)
    first = augment_episode(episode, condition, toy)
    # a caller's global state neither influences the result nor is consumed by it
    random.seed(2)
    np.random.seed(2)
    py_state, np_state = random.getstate(), np.random.get_state()
    second = augment_episode(episode, condition, toy)
    assert random.getstate() == py_state
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state()[1:2], np_state[1:2], strict=True))
    assert np.random.get_state()[2] == np_state[2]
    assert _shas(first) == _shas(second)
    assert _shas(first)["query/0"] != _shas(episode)["query/0"]
    assert first["augment"]["clips"]["query/0"][0]["transform"] == name


def test_different_clips_draw_differently_and_levels_share_their_draws(toy):
    """Every clip has its own noise; a sweep scales the same noise (common random numbers)."""
    episode = toy.episode(0)
    low, high = parse_augment(["noise_snr=0,20"], "all").conditions
    a, b = augment_episode(episode, low, toy), augment_episode(episode, high, toy)
    clean = episode["query"]["clips"][0]["audio"].samples
    noise_low = a["query"]["clips"][0]["audio"].samples - clean
    noise_high = b["query"]["clips"][0]["audio"].samples - clean
    assert np.corrcoef(noise_low, noise_high)[0, 1] > 0.99
    demo_noise = a["demos"][0]["clips"][0]["audio"].samples - episode["demos"][0]["clips"][0]["audio"].samples
    assert abs(np.corrcoef(noise_low, demo_noise)[0, 1]) < 0.2
    other = augment_episode(toy.episode(1), low, toy)
    assert other["query"]["clips"][0]["audio"].sha256 != a["query"]["clips"][0]["audio"].sha256


def test_concurrent_threads_get_the_same_clips_as_one_thread(toy):
    condition = _condition("time_mask_fraction=0.3")  # audiomentations draws the mask position
    episodes = [toy.episode(i) for i in range(4)]
    expected = [_shas(augment_episode(e, condition, toy)) for e in episodes]
    got: dict[int, list] = {}

    def work(slot: int) -> None:
        got[slot] = [_shas(augment_episode(e, condition, toy)) for e in episodes for _ in range(3)][::3]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(v == expected for v in got.values())


@pytest.mark.parametrize(
    "kind", ["noise_snr", "pink_noise_snr", "brown_noise_snr", "babble_snr", "env_noise_snr"]
)
def test_measured_snr_is_within_half_a_db_of_the_request(kind):
    builder = make_builder("audioicl_bench", "audio_count", {"n_episodes": 3, "max_shots": 2})
    plan = parse_augment([f"{kind}=40,20,10,0,-10"], "all")
    for index in range(3):
        episode = builder.episode(index)
        clean = _shas(episode)
        for condition in plan.conditions:
            level = condition.steps[0].level
            noisy = augment_episode(episode, condition, builder)
            for slot, (clip_clean, clip_noisy) in enumerate(
                zip(
                    episode["demos"][0]["clips"] + episode["query"]["clips"],
                    noisy["demos"][0]["clips"] + noisy["query"]["clips"],
                    strict=True,
                )
            ):
                gain = noisy["augment"]["clips"]["query/0" if slot else "demos/0/0"][0]["headroom_gain"]
                got = measured_snr_db(clip_clean["audio"].samples * gain, clip_noisy["audio"].samples)
                assert abs(got - level) <= 0.5, (kind, index, level, got)
            assert _shas(noisy) != clean


def test_on_grid_is_quantize():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            (rng.standard_normal(50_000) * 0.7).astype(np.float32),
            (np.arange(-70_000, 70_000) / 2 / 32767).astype(np.float32),  # exact half steps
            np.array([1.0, -1.0, 1.5, -3.0, 0.0], dtype=np.float32),
        ]
    )
    assert np.array_equal(on_grid(x), quantize(x))


def test_targets_pick_the_clips(toy):
    episode = toy.episode(2)
    clean = _shas(episode)
    for target, changed in (("query", {"query/0"}), ("demos", set(clean) - {"query/0"}), ("all", set(clean))):
        got = _shas(augment_episode(episode, _condition("gain_db=-6", target), toy))
        assert {slot for slot in clean if got[slot] != clean[slot]} == changed, target
    assert _shas(episode) == clean  # the builder's episode is left untouched


def test_a_degraded_request_differs_from_the_clean_one_in_its_audio_only(toy_dir):
    from audioeval.config.registry import TaskRegistry
    from audioeval.run.conditions import with_conditions
    from audioeval.run.prepared import prepare_tasks
    from audioeval.types import TextPart

    registry = TaskRegistry.discover([str(toy_dir)])
    (clean,) = prepare_tasks(
        registry, ["toy_tones"], num_fewshot=[0, 3], task_args={}, limit=None, seed=0, gen_kwargs={}
    )
    _, degraded = with_conditions([clean], parse_augment(["noise_snr=10"]))
    assert degraded.name == "toy_tones@noise_snr=10"
    for (a, target_a), (b, target_b) in zip(
        clean.requests_for(clean.episode(3)), degraded.requests_for(degraded.episode(3)), strict=True
    ):
        assert target_a == target_b and a.rid == b.rid
        assert a.gen_kwargs == b.gen_kwargs and a.choices == b.choices
        assert [m.role for m in a.messages] == [m.role for m in b.messages]
        for ma, mb in zip(a.messages, b.messages, strict=True):
            assert [p.text for p in ma.parts if isinstance(p, TextPart)] == [
                p.text for p in mb.parts if isinstance(p, TextPart)
            ]
        clips_a, clips_b = a.clips, b.clips
        assert [c.sha256 for c in clips_a[:-1]] == [c.sha256 for c in clips_b[:-1]]  # the demos
        assert clips_a[-1].sha256 != clips_b[-1].sha256  # the query
        assert a.content_key({"m": 1}) != b.content_key({"m": 1})
        info_b = dict(b.info["sample_info"])
        assert info_b.pop("augment") == "noise_snr=10"
        assert info_b == a.info["sample_info"]


def test_condition_record_round_trips(toy):
    condition = parse_augment(["reverb_rt60=0.5", "noise_snr=10,0"], "demos").conditions[1]
    assert condition.name == "reverb_rt60=0.5+noise_snr=0"
    again = Condition.from_record(condition.record())
    assert again == condition
    episode = toy.episode(1)
    assert _shas(augment_episode(episode, again, toy)) == _shas(augment_episode(episode, condition, toy))


@pytest.mark.parametrize(
    "flags, target, expected",
    [
        (["nois_snr=10"], "query", "unknown transform 'nois_snr'. Did you mean: noise_snr"),
        (["volume=3"], "query", "Accepted transforms and levels: noise_snr (a number in [-30, 60] dB)"),
        (["noise_snr=70"], "query", "level 70 is out of range; noise_snr takes a number in [-30, 60] dB"),
        (["mp3_kbps=33"], "query", "mp3_kbps takes one of 8, 16, 24, 32"),
        (["clip_percent=2.5"], "query", "clip_percent takes an integer in [0, 90] %"),
        (["noise_snr"], "query", "noise_snr needs a level: a number in [-30, 60] dB, e.g. noise_snr=15"),
        (["telephone=3"], "query", "telephone takes no level"),
        (["noise_snr=ten"], "query", "level 'ten' is not a number"),
        (["noise_snr=10,10"], "query", "level 10 is listed twice"),
        (["noise_snr=10,0", "gain_db=0,6"], "query", "sweep one transform per run"),
        (["noise_snr=10", "noise_snr=0"], "query", "is given twice"),
        (["noise_snr=10"], "demo", "--augment_target 'demo': choose one of query"),
        (["noise_snr=nan"], "query", "level nan is out of range; noise_snr takes a number in [-30, 60] dB"),
        (["noise_snr=inf"], "query", "level inf is out of range"),
        (["gain_db=-inf"], "query", "level -inf is out of range; gain_db takes a number in [-60, 40] dB"),
        (["gain_db=1e999"], "query", "level 1e999 is out of range"),
        (["noise_snr=0x10"], "query", "level '0x10' is not a number"),
        (["noise_snr=10,"], "query", "level '' is not a number"),
        ([""], "query", "--augment is given an empty value; name a transform, e.g. --augment noise_snr=15"),
        (["noise_snr=" + "9" * 5000], "query", "… (5000 characters) is out of range"),
        (["x" * 500], "query", "unknown transform 'xxxxxxxxxx"),
    ],
)
def test_bad_flags_say_what_is_accepted(flags, target, expected):
    with pytest.raises(UsageError) as err:
        parse_augment(flags, target)
    assert expected in str(err.value)
    assert len(str(err.value)) < 1500  # a huge value is quoted cut, not echoed whole


def test_bad_flags_from_the_command_line_exit_2_without_a_traceback(toy_dir):
    args = ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "chance"]
    code, _, err = run_cli([*args, "--augment", "lowpass_hz=2"])
    assert code == 2 and "lowpass_hz takes a number in [100, 24000] Hz" in err and "Traceback" not in err
    code, _, err = run_cli([*args, "--augment", "lowpass_hz=9000", "--augment_target", "all"])
    assert code == 2 and "not below the Nyquist frequency of a 16000 Hz clip" in err


@pytest.mark.parametrize(
    "name, package, module",
    [
        ("mp3_kbps=32", "fast-mp3-augment", "fast_mp3_augment"),
        ("room_rt60=0.5", "pyroomacoustics", "pyroomacoustics"),
    ],
)
def test_a_missing_optional_package_is_named_before_any_work(toy_dir, monkeypatch, name, package, module):
    monkeypatch.setitem(sys.modules, module, None)  # makes the import fail as if not installed
    code, _, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--model", "chance", "--augment", name]
    )
    assert code == 2
    assert f"needs the Python package '{package}'" in err and f"pip install {package}" in err


def test_a_transform_that_would_falsify_labels_is_refused(tmp_path):
    code, _, err = run_cli(
        ["--tasks", "audioicl_audio_length", "--model", "chance", "--augment", "time_stretch_rate=1.2"]
    )
    assert code == 2
    assert "task 'audioicl_audio_length' refuses it: the label is the clip's duration" in err
    code, _, err = run_cli(
        [
            "build",
            "audioicl_bench",
            "--configs",
            "audio_count",
            "--output_dir",
            str(tmp_path / "x"),
            "--augment",
            "time_mask_fraction=0.2",
        ]
    )
    assert code == 2 and "config 'audio_count' refuses it" in err
    assert not (tmp_path / "x").exists()


def test_paired_drop_resamples_both_conditions_alike():
    agg = Aggregation("mean", ("acc",))
    clean = {"acc": np.array([1.0, 1, 0, 1, 1, 0, 1, 1])}
    same = paired_drop(clean, {"acc": clean["acc"].copy()}, agg, False, 500, 3)
    assert same["drop"] == 0 and same["drop_ci95"] == [0.0, 0.0]  # unpaired CIs would not be [0, 0]
    worse = {"acc": np.array([1.0, 0, 0, 1, 0, 0, 1, 0])}
    got = paired_drop(clean, worse, agg, False, 500, 3)
    assert got["drop"] == pytest.approx(0.375) and got["relative_drop"] == pytest.approx(0.5)
    assert 0 < got["drop_ci95"][0] <= 0.375 <= got["drop_ci95"][1]
    lower = paired_drop(
        {"wer": np.array([0.1, 0.2])},
        {"wer": np.array([0.3, 0.4])},
        Aggregation("mean", ("wer",)),
        True,
        0,
        0,
    )
    assert lower["drop"] == pytest.approx(0.2)  # a higher error rate is a loss


def test_reverb_bank_is_written_once_and_reused(toy):
    from audioeval.augment.reverb import IR_BANK_SIZE, ir_bank

    files = ir_bank(0.6, 16000)
    assert len(files) == IR_BANK_SIZE and all(Path(f).is_file() for f in files)
    stamps = [Path(f).stat().st_mtime_ns for f in files]
    ir_bank.cache_clear()
    assert ir_bank(0.6, 16000) == files
    assert [Path(f).stat().st_mtime_ns for f in files] == stamps
