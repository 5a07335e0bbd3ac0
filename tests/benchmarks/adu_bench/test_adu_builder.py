"""ADU-Bench episodes: zero-shot structure, determinism, the variation grid and what it does to the audio."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from adu_helpers import write_jsonl

from audioeval.benchmarks.adu_bench.queries import read_query_file
from audioeval.benchmarks.adu_bench.render import LEVELS, SPEAKERS, Variation, render
from audioeval.data.builders import make_builder
from audioeval.errors import ConfigError, DataError
from audioeval.resources import builders_dir

SR = 16000


def f0_track(x: np.ndarray, sr: int = SR) -> np.ndarray:
    """Frame-wise autocorrelation pitch (Hz) of voiced frames, NaN elsewhere."""
    n, hop, out = 640, 160, []
    for s in range(0, len(x) - n, hop):
        frame = x[s : s + n] - x[s : s + n].mean()
        if np.sqrt((frame**2).mean()) < 0.02:
            out.append(np.nan)
            continue
        ac = np.correlate(frame, frame, "full")[n - 1 :]
        lo, hi = sr // 500, sr // 60
        lag = lo + int(np.argmax(ac[lo:hi]))
        out.append(sr / lag if ac[lag] > 0.4 * ac[0] else np.nan)
    return np.array(out)


def longest_silence(x: np.ndarray, sr: int = SR) -> tuple[float, float]:
    """(duration, relative start) of the longest stretch of 10 ms frames below -45 dBFS inside the speech."""
    frames = np.abs(x[: len(x) // 160 * 160]).reshape(-1, 160).max(axis=1) < 10 ** (-45 / 20)
    voiced = np.where(~frames)[0]
    best, start, run = 0, 0, 0
    for i in range(voiced[0], voiced[-1]):
        run = run + 1 if frames[i] else 0
        if run > best:
            best, start = run, i - run + 1
    return best * 0.01, (start - voiced[0]) / (voiced[-1] - voiced[0])


def item(item_id: str):
    for name in ("general", "ambiguity"):
        for it in read_query_file(builders_dir() / "adu_bench" / "corpus" / f"{name}.jsonl"):
            if it.item_id == item_id:
                return it
    raise KeyError(item_id)


def grid(**levels) -> Variation:
    base = {
        "speaker": "m1",
        "gender": "male",
        "voice": "en-us+m1",
        "rate": "standard",
        "pitch": "standard",
        "volume": "standard",
    }
    return Variation(**{**base, **levels})


def test_episodes_are_zero_shot_spoken_queries_with_fields_and_variation():
    builder = make_builder("adu_bench", "skill", {})
    assert builder.num_episodes() == 48 and builder.max_supported_shots() == 0
    ep = builder.episode(0)
    assert ep["demos"] == [] and ep["context"] == []
    (clip,) = ep["query"]["clips"]
    assert clip["audio"].sampling_rate == SR and clip["audio"].seconds > 0.5
    for key in ("question", "reference", "domain", "language", "variation"):
        assert ep["query"][key] is not None
    assert ep["query"]["label"] == ep["query"]["reference"]
    assert ep["metadata"]["variation"] == ep["query"]["variation"] == builder.describe(0)["variation"]
    assert builder.describe(0)["id"] == ep["id"] == "skill/skill-math-01"


def test_episodes_are_pure_functions_of_seed_and_index():
    a = make_builder("adu_bench", "general", {"seed": 3})
    b = make_builder("adu_bench", "general", {"seed": 3})
    c = make_builder("adu_bench", "general", {"seed": 4})
    same = [a.episode(i)["query"]["clips"][0]["audio"].sha256 for i in (5, 1)]
    assert same == [b.episode(i)["query"]["clips"][0]["audio"].sha256 for i in (5, 1)]
    assert [a.describe(i)["variation"] for i in range(30)] != [c.describe(i)["variation"] for i in range(30)]


def test_a_limit_prefix_spans_domains_and_repetitions_add_renderings():
    builder = make_builder("adu_bench", "skill", {"variations_per_query": 2})
    assert builder.num_episodes() == 96
    assert len({builder.describe(i)["domain"] for i in range(12)}) == 12
    first, second = builder.describe(0), builder.describe(48)
    assert first["item_id"] == second["item_id"] and second["id"].endswith("#1")
    assert make_builder("adu_bench", "skill", {"n_episodes": 5}).num_episodes() == 5


def test_renderings_cover_the_whole_variation_grid():
    builders = [
        make_builder("adu_bench", c, {"variations_per_query": 2})
        for c in ("general", "skill", "multilingual", "ambiguity")
    ]
    variations = [b.describe(i)["variation"] for b in builders for i in range(b.num_episodes())]
    assert {v["speaker"] for v in variations} == {s for s, _ in SPEAKERS}
    assert Counter(v["gender"] for v in variations).keys() == {"male", "female"}
    for factor in ("rate", "pitch", "volume"):
        assert {v[factor] for v in variations} == set(LEVELS)
    standard = make_builder("adu_bench", "general", {"variation": "standard"})
    assert all(
        (v["rate"], v["pitch"], v["volume"]) == ("standard",) * 3
        for v in (standard.describe(i)["variation"] for i in range(30))
    )


def test_rate_pitch_and_volume_levels_change_the_audio_by_about_ten_percent():
    it = item("gen-hq-03")
    base = render(it, grid(), SR)
    assert 1.05 < len(render(it, grid(rate="-10%"), SR)) / len(base) < 1.15
    assert 0.85 < len(render(it, grid(rate="+10%"), SR)) / len(base) < 0.95
    f0 = np.nanmedian(f0_track(base))
    assert 1.05 < np.nanmedian(f0_track(render(it, grid(pitch="+10%"), SR))) / f0 < 1.15
    assert 0.85 < np.nanmedian(f0_track(render(it, grid(pitch="-10%"), SR))) / f0 < 0.95
    rms = np.sqrt(np.mean(base**2))
    assert 1.05 < np.sqrt(np.mean(render(it, grid(volume="+10%"), SR) ** 2)) / rms < 1.15
    assert 0.85 < np.sqrt(np.mean(render(it, grid(volume="-10%"), SR) ** 2)) / rms < 0.95


@pytest.mark.parametrize(("pair", "speaker"), [("amb-int-03", "m1"), ("amb-int-01", "f2")])
def test_intonation_items_end_rising_or_falling(pair, speaker):
    voice = {
        "speaker": speaker,
        "voice": f"en-us+{speaker}",
        "gender": "male" if speaker[0] == "m" else "female",
    }

    def tail_and_head(it) -> tuple[float, float]:
        track = f0_track(render(it, grid(**voice, contour=it.contour), SR))
        voiced = track[~np.isnan(track)]
        return float(np.median(voiced[int(0.8 * len(voiced)) :])), float(
            np.median(voiced[: len(voiced) // 2])
        )

    rising, falling = item(f"{pair}r"), item(f"{pair}f")
    assert rising.question == falling.question
    (rise_tail, rise_head), (fall_tail, fall_head) = tail_and_head(rising), tail_and_head(falling)
    assert rise_tail > rise_head and fall_tail < fall_head
    assert rise_tail > 1.15 * fall_tail  # the same words end clearly higher when rising


def test_pause_items_carry_a_long_pause_where_marked():
    a, b = (
        item("amb-pau-02a"),
        item("amb-pau-02b"),
    )  # "two plus three | times four" / "two | plus three times four"
    gap_a, where_a = longest_silence(render(a, grid(pause=a.spoken), SR))
    gap_b, where_b = longest_silence(render(b, grid(pause=b.spoken), SR))
    assert gap_a >= 0.5 and gap_b >= 0.5
    assert where_b < where_a  # the pause after "two" comes earlier than the one after "three"
    plain = replace(a, spoken=None, dataset="general", domain="helpful_question")
    assert longest_silence(render(plain, grid(), SR))[0] < 0.3


def test_queries_file_adds_items_and_builtin_false_keeps_only_them(tmp_path: Path):
    path = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {
                "id": "my-1",
                "dataset": "skill",
                "domain": "law",
                "question": "Is jaywalking a crime?",
                "reference": "Often a minor offence.",
            },
            {
                "id": "my-2",
                "dataset": "general",
                "domain": "daily_statement",
                "question": "Nice day.",
                "reference": "Agree.",
            },
        ],
    )
    assert make_builder("adu_bench", "skill", {"queries_file": str(path)}).num_episodes() == 49
    mine = make_builder("adu_bench", "skill", {"queries_file": str(path), "builtin": False})
    assert mine.num_episodes() == 1 and mine.episode(0)["query"]["question"] == "Is jaywalking a crime?"
    with pytest.raises(DataError, match="holds no items of dataset 'ambiguity'"):
        make_builder("adu_bench", "ambiguity", {"queries_file": str(path), "builtin": False})


def test_bad_builder_arguments_are_rejected_before_generation():
    with pytest.raises(ConfigError, match="variation must be one of"):
        make_builder("adu_bench", "general", {"variation": "wild"})
    with pytest.raises(ConfigError, match="zero-shot"):
        make_builder("adu_bench", "general", {"max_shots": 2})
    with pytest.raises(DataError, match="not a folder"):
        make_builder("adu_bench", "general", {"data_dir": "/nonexistent/adu"})


def test_data_dir_reads_the_released_layout_and_resamples(upstream_dir: Path):
    builder = make_builder("adu_bench", "skill", {"data_dir": str(upstream_dir)})
    assert builder.num_episodes() == 3
    ep = builder.episode(0)
    assert ep["query"]["clips"][0]["audio"].sampling_rate == SR
    assert abs(ep["query"]["clips"][0]["audio"].seconds - 0.1) < 0.01
    assert ep["metadata"]["variation"]["speaker"] in ("AndrewMultilingualNeural", "BrianMultilingualNeural")
    assert {builder.describe(i)["domain"] for i in range(3)} == {"physics", "mathematics"}
