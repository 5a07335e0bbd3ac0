"""Offline speech synthesis through eSpeak NG."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.audio import speech
from audioeval.errors import DataError


def test_synthesis_is_deterministic_cached_and_on_the_16_bit_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIOEVAL_CACHE", str(tmp_path))
    speech._synthesize_cached.cache_clear()
    first = speech.synthesize("the quick brown fox", variant="m3")
    assert first.dtype == np.float32 and 0.5 < len(first) / 16000 < 3.0 and np.abs(first).max() > 0.05
    assert list(tmp_path.glob("speech/*/*.wav"))  # cached on disk
    speech._synthesize_cached.cache_clear()
    again = speech.synthesize("the quick brown fox", variant="m3")  # read back from disk
    assert np.array_equal(first, again)
    assert np.allclose(first * 32767, np.round(first * 32767), atol=1e-3)


def test_voice_rate_and_ssml_change_the_audio():
    base = speech.synthesize("seven", variant="m3")
    assert not np.array_equal(base, speech.synthesize("seven", variant="f2"))
    assert len(speech.synthesize("seven", variant="m3", rate=100)) > len(
        speech.synthesize("seven", variant="m3", rate=300)
    )
    plain = speech.synthesize("go now", ssml=True)
    paused = speech.synthesize('go <break time="800ms"/> now', ssml=True)
    assert len(paused) - len(plain) > 0.5 * 16000


def test_other_languages_and_unknown_voice():
    assert len(speech.synthesize("bonjour", language="fr")) > 0
    with pytest.raises(DataError, match="no voice"):
        speech.synthesize("hello", language="xx-nonexistent")


@pytest.mark.slow
def test_the_same_input_gives_the_same_samples_whatever_was_spoken_before():
    # eSpeak NG keeps state between utterances; the helper process speaks each one from a pristine state
    engine = speech._engine()
    params = {"rate": 160, "pitch": 50, "range": 50, "volume": 100, "wordgap": 0}
    first = engine.synth("seven", "en+f2", params, False)
    engine.synth("a long and different sentence first", "en+m1", dict(params, rate=300), False)
    assert np.array_equal(first, engine.synth("seven", "en+f2", params, False))
    import subprocess
    import sys

    code = (
        "import sys, numpy as np; from audioeval.audio import speech;"
        "p={'rate':160,'pitch':50,'range':50,'volume':100,'wordgap':0};"
        "sys.stdout.buffer.write(speech._engine().synth('seven','en+f2',p,False).tobytes())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60).stdout
    assert np.array_equal(first, np.frombuffer(other, dtype=np.float32))
