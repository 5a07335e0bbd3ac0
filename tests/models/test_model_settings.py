"""Generation settings and audio preparation shared by the local backends."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.errors import ModelError
from audioeval.models.generation import read_settings
from audioeval.models.hf.audio import AudioPreparer, resample
from audioeval.types import AudioClip


def test_greedy_by_default_and_sampling_on_request():
    greedy = read_settings({"max_new_tokens": 8}, 256, "t")
    assert (greedy.do_sample, greedy.max_new_tokens, greedy.temperature) == (False, 8, None)
    assert read_settings({"temperature": 0}, 256, "t").do_sample is False
    sampled = read_settings({"temperature": 0.7, "top_p": 0.9, "max_gen_toks": 3}, 256, "t")
    assert (sampled.do_sample, sampled.temperature, sampled.top_p, sampled.max_new_tokens) == (
        True,
        0.7,
        0.9,
        3,
    )
    assert read_settings({}, 17, "t").max_new_tokens == 17


def test_stop_strings_cut_the_text():
    settings = read_settings({"until": ["\n", "Label:"]}, 8, "t")
    assert settings.cut("high\nLabel: low") == "high"
    assert read_settings({"stop": "X"}, 8, "t").cut("abXcd") == "ab"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beams": 2}, "'beams' is not understood"),
        ({"max_new_tokens": 0}, "at least 1"),
        ({"do_sample": True, "temperature": 0}, "temperature > 0"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ModelError, match=message):
        read_settings(kwargs, 8, "t")


def test_resampling_keeps_pitch_and_duration():
    rate = 8000
    t = np.arange(rate) / rate
    y = resample(np.sin(2 * np.pi * 440 * t).astype(np.float32), rate, 16000)
    assert len(y) == 16000 and y.dtype == np.float32
    peak = np.argmax(np.abs(np.fft.rfft(y))) * 16000 / len(y)
    assert abs(peak - 440) <= 1
    same = np.ones(10, dtype=np.float32)
    assert resample(same, 16000, 16000) is not None and np.array_equal(resample(same, 16000, 16000), same)


def test_preparer_resamples_then_truncates_and_records():
    preparer = AudioPreparer(sampling_rate=16000, max_seconds=1.0, source="test")
    clips = [AudioClip.from_array(np.zeros(44100 * 2), 44100), AudioClip.from_array(np.zeros(8000), 8000)]
    batch = preparer.prepare(clips)
    assert [len(a) for a in batch.arrays] == [16000, 16000]
    assert batch.truncated == [{"clip": 0, "seconds": 2.0, "kept_seconds": 1.0}]
