"""The episode store keeps every clip's PCM16 samples exactly: whatever the audio (silence, tones, noise, the
extremes of the range), whichever encoding an earlier version stored it in; and a clip handed to another process
arrives with the same samples, PCM16 values and identity."""

from __future__ import annotations

import logging
import pickle
import sqlite3
import zlib

import numpy as np
import pytest

from audioeval.run.episode_store import (
    EpisodeStore,
    StoredClip,
    decode_clip,
    encode_clip,
    encode_episode,
)
from audioeval.types import AudioClip

rng = np.random.default_rng(7)
SIGNALS = {
    "silence": np.zeros(16000, dtype="<i2"),
    "one sample": np.array([-5], dtype="<i2"),
    "extremes": np.array([-32768, 32767, -32768, 0, 32767, 32767], dtype="<i2"),
    "noise": (rng.standard_normal(40000) * 3000).astype("<i2"),
    "full-scale noise": rng.integers(-32768, 32768, 30000).astype("<i2"),
    "tone with silence": np.concatenate(
        [np.zeros(8000), np.sin(np.arange(20000) * 0.23) * 12000, np.zeros(5000)]
    ).astype("<i2"),
}


def earlier_encoding(pcm: np.ndarray) -> bytes:
    """How audioeval 0.2 stored a clip: first differences, both byte planes in one zlib stream."""
    delta = np.diff(pcm.astype("<i2"), prepend=np.int16(0)).astype("<i2")
    return zlib.compress(delta.view(np.uint8).reshape(-1, 2).T.tobytes(), 1)


@pytest.mark.parametrize("name", SIGNALS)
def test_every_kind_of_audio_decodes_to_the_samples_stored(name):
    pcm = SIGNALS[name]
    assert np.array_equal(decode_clip(encode_clip(pcm), len(pcm)), pcm)
    assert np.array_equal(decode_clip(earlier_encoding(pcm), len(pcm)), pcm)


def test_quiet_audio_is_kept_smaller_than_its_samples():
    assert len(encode_clip(SIGNALS["silence"])) < 0.02 * SIGNALS["silence"].nbytes
    assert len(encode_clip(SIGNALS["tone with silence"])) < 0.6 * SIGNALS["tone with silence"].nbytes


@pytest.mark.parametrize("cut", [0, 3, 9, -1])
def test_a_cut_or_padded_blob_does_not_decode(cut):
    pcm = SIGNALS["noise"]
    blob = encode_clip(pcm)
    damaged = blob + b"\0" if cut == -1 else blob[: len(blob) // 2 + cut]
    with pytest.raises((ValueError, zlib.error)):
        decode_clip(damaged, len(pcm))


def episode_of(*arrays: np.ndarray) -> dict:
    clips = [
        {"role": "demo", "label": str(i), "audio": AudioClip.from_pcm16(a, 16000)}
        for i, a in enumerate(arrays)
    ]
    return {"id": "e", "index": 0, "context": [], "demos": [{"clips": clips, "label": "x"}],
            "query": {"clips": clips[:1], "label": "x"}, "metadata": {}}  # fmt: skip


def read_back(store: EpisodeStore, config: str) -> list[np.ndarray]:
    episode = store.get_many(config, [0])[0]
    return [c["audio"].pcm16 for c in episode["demos"][0]["clips"]]


def test_audio_stored_by_an_earlier_version_is_read_back_by_a_new_episode(tmp_path, caplog):
    noise, tone = SIGNALS["noise"], SIGNALS["tone with silence"]
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    episode = episode_of(noise, tone)
    store.put_many("old", {0: encode_episode(episode)})
    db = sqlite3.connect(tmp_path / "episodes.sqlite")
    with db:  # the clips' audio as an earlier version wrote it
        for pcm in (noise, tone):
            data = earlier_encoding(pcm)
            sha = AudioClip.from_pcm16(pcm, 16000).sha256
            db.execute("UPDATE clips SET data = ?, size = ? WHERE sha256 = ?", (data, len(data), sha))
    db.close()
    store.put_many("new", {0: encode_episode(episode_of(noise, tone))})
    reopened = EpisodeStore(tmp_path / "episodes.sqlite")
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        new = read_back(reopened, "new")
    assert [np.array_equal(a, b) for a, b in zip(new, (noise, tone), strict=True)] == [True, True]
    assert not caplog.records


def test_damaged_audio_is_replaced_when_the_clip_is_stored_again(tmp_path, caplog):
    noise = SIGNALS["noise"]
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    store.put_many("a", {0: encode_episode(episode_of(noise))})
    db = sqlite3.connect(tmp_path / "episodes.sqlite")
    with db:
        db.execute("UPDATE clips SET data = ?", (b"\x78\x9c not zlib",))
    db.close()
    store.put_many("b", {0: encode_episode(episode_of(noise))})
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        assert np.array_equal(read_back(EpisodeStore(tmp_path / "episodes.sqlite"), "b")[0], noise)
    assert not caplog.records


@pytest.mark.parametrize("make", ["from_array", "from_pcm16", "samples", "stored"])
def test_a_clip_reaches_another_process_as_it_is(tmp_path, make):
    pcm = SIGNALS["extremes"] if make == "from_pcm16" else SIGNALS["tone with silence"]
    if make == "from_array":
        clip = AudioClip.from_array(pcm / 32767.0, 16000)
    elif make == "from_pcm16":
        clip = AudioClip.from_pcm16(pcm, 16000)  # -32768 included: kept, not put on the +-32767 grid
    elif make == "samples":
        clip = AudioClip(np.array([0.1, -0.25, 0.3333], dtype=np.float32), 16000)  # not on the grid: kept so
    else:
        store = EpisodeStore(tmp_path / "episodes.sqlite")
        store.put_many("a", {0: encode_episode(episode_of(pcm))})
        clip = store.get_many("a", [0])[0]["demos"][0]["clips"][0]["audio"]
    copy = pickle.loads(pickle.dumps(clip))
    assert isinstance(copy, AudioClip) and not isinstance(copy, StoredClip)
    assert copy.sha256 == clip.sha256 and copy.sampling_rate == clip.sampling_rate
    assert copy.samples.dtype == np.float32 and copy.samples.tobytes() == clip.samples.tobytes()
    assert copy.pcm16.tobytes() == clip.pcm16.tobytes() and copy.wav_bytes() == clip.wav_bytes()


@pytest.mark.parametrize("damage", ["deleted", "garbled"])
def test_an_episode_whose_audio_is_lost_is_made_again_once_and_stored_healed(tmp_path, caplog, damage):
    clips = (SIGNALS["noise"], SIGNALS["tone with silence"], SIGNALS["extremes"])
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    store.put_many("a", {0: encode_episode(episode_of(*clips))})
    db = sqlite3.connect(tmp_path / "episodes.sqlite")
    with db:  # every clip's audio lost
        if damage == "deleted":
            db.execute("DELETE FROM clips")
        else:
            db.execute("UPDATE clips SET data = ?", (b"\x02 not a blob",))
    db.close()
    remade = []

    def remake(index: int) -> dict:
        remade.append(index)
        return episode_of(*clips)

    reopened = EpisodeStore(tmp_path / "episodes.sqlite")
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        episode = reopened.get_many("a", [0], remake)[0]
        read = [c["audio"].pcm16 for c in episode["demos"][0]["clips"]]
    assert remade == [0]  # once for the episode, not once per clip
    assert all(np.array_equal(a, b) for a, b in zip(read, clips, strict=True))
    assert len(caplog.records) == 1

    def no_remake(index: int) -> dict:
        raise AssertionError("the audio was written back: nothing is made again")

    again = EpisodeStore(tmp_path / "episodes.sqlite").get_many("a", [0], no_remake)[0]
    healed = [c["audio"].pcm16 for c in again["demos"][0]["clips"]]
    assert all(np.array_equal(a, b) for a, b in zip(healed, clips, strict=True))


def test_audio_an_episode_was_stored_without_is_kept_once_it_is_made(tmp_path):
    clips = (SIGNALS["noise"], SIGNALS["tone with silence"])
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    store.put_many("a", {0: encode_episode(episode_of(*clips), audio=False)})  # a study's episode
    remade = []

    def remake(index: int) -> dict:
        remade.append(index)
        return episode_of(*clips)

    for _ in range(2):
        episode = EpisodeStore(tmp_path / "episodes.sqlite").get_many("a", [0], remake)[0]
        read = [c["audio"].pcm16 for c in episode["demos"][0]["clips"]]
        assert all(np.array_equal(a, b) for a, b in zip(read, clips, strict=True))
    assert remade == [0]
