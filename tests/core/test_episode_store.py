"""The episode store's read side: a clip's audio read back as it was stored, decoded once per content."""

from __future__ import annotations

import numpy as np

import audioeval.run.episode_store as episode_store
from audioeval.run.episode_store import EpisodeStore, encode_episode, read_audio
from audioeval.types import AudioClip, AudioPart, Message, Request, RequestId


def _clip(seed: int) -> AudioClip:
    return AudioClip.from_array(0.3 * np.random.default_rng(seed).standard_normal(8000), 16000)


def test_a_clip_that_recurs_across_episodes_is_decoded_once_while_a_clip_holds_it(tmp_path, monkeypatch):
    """A Morse bank's letters or a corpus clip recur in every episode: reading the episodes back decodes
    their audio once, and every episode's clips give back exactly the samples stored."""
    shared, own = _clip(0), [_clip(i) for i in (1, 2, 3)]
    episodes = {
        i: {"index": i, "query": {"clips": [{"audio": shared}, {"audio": own[i]}], "label": str(i)}}
        for i in range(3)
    }
    store = EpisodeStore(tmp_path / "episodes.sqlite")
    store.put_many("config", {i: encode_episode(e) for i, e in episodes.items()})
    decoded: list[int] = []
    real = episode_store.decode_clip
    monkeypatch.setattr(
        episode_store, "decode_clip", lambda data, frames: decoded.append(frames) or real(data, frames)
    )

    read = store.get_many("config", [0, 1, 2])
    clips = [c["audio"] for i in range(3) for c in read[i]["query"]["clips"]]
    request = Request((Message("user", tuple(AudioPart(c) for c in clips)),), {}, RequestId("t", 0, 0))
    read_audio(request)
    assert len(decoded) == 4  # the shared clip once, each episode's own clip once
    for i in range(3):
        back = [c["audio"] for c in read[i]["query"]["clips"]]
        assert [c.sha256 for c in back] == [shared.sha256, own[i].sha256]
        assert np.array_equal(back[0].samples, shared.samples) and np.array_equal(
            back[1].samples, own[i].samples
        )
        assert back[0].wav_bytes() == shared.wav_bytes()
    store.close()
