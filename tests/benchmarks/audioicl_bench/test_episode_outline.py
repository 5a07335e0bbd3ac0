"""Episode outlines (`EpisodeBuilder.episode_outline`): the labels and clip identities of an episode without
synthesizing it, what the signal-blind `shortcut` baseline studies. An outline must tell exactly what the
episode tells such a model: the same labels, roles and label facts, and clip identities equal exactly where
the episode's clips are byte-identical."""

from __future__ import annotations

import itertools

import pytest

import audioeval
from audioeval.benchmarks.audioicl_bench.baselines import shortcut
from audioeval.config.registry import TaskRegistry
from audioeval.data.builders import make_builder
from audioeval.run.prepared import prepare_tasks
from audioeval.types import UnrenderedClip

OUTLINED = ["audio_count", "audio_count_hard", "anomaly_detect", "audio_length", "audio_length_hard",
            "audio_operator", "audio_operator_hard"]  # fmt: skip
NOT_OUTLINED = ["audio_remap", "morse_code", "morse_letter"]


def builder(config: str, seed: int = 0, **kwargs):
    return make_builder("audioicl_bench", config, {"n_episodes": 50, "max_shots": 5, "seed": seed, **kwargs})


def clips_of(episode: dict) -> list[dict]:
    return [
        *episode["context"],
        *(c for d in episode["demos"] for c in d["clips"]),
        *episode["query"]["clips"],
    ]


def part_of(part, whole) -> bool:
    """Every fact of `part` is in `whole` (dicts by key, lists item by item); clips are compared apart."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and part_of(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(part) == len(whole) and all(map(part_of, part, whole))
    return part == whole


def assert_outline_tells_what_the_episode_tells(outline: dict, episode: dict) -> None:
    assert (outline["id"], outline["index"]) == (episode["id"], episode["index"])
    without_clips = [
        {k: v for k, v in shot.items() if k != "clips"} for shot in [*outline["demos"], outline["query"]]
    ]
    assert part_of(without_clips, [*episode["demos"], episode["query"]])
    assert part_of(outline["metadata"], episode["metadata"])
    mine, theirs = clips_of(outline), clips_of(episode)
    assert [(c["role"], c["label"]) for c in mine] == [(c["role"], c["label"]) for c in theirs]
    assert all(isinstance(c["audio"], UnrenderedClip) for c in mine)
    for (a, b), (x, y) in zip(
        itertools.combinations(mine, 2), itertools.combinations(theirs, 2), strict=True
    ):
        assert (a["audio"].sha256 == b["audio"].sha256) == (x["audio"].sha256 == y["audio"].sha256)


@pytest.mark.parametrize("config", OUTLINED)
@pytest.mark.parametrize("seed", [0, 7919])
def test_an_outline_tells_what_its_episode_tells(config, seed):
    made = builder(config, seed)
    for index in range(3):
        assert_outline_tells_what_the_episode_tells(made.episode_outline(index), made.episode(index))


def test_outlines_follow_shortcut_free_counts():
    made = builder("audio_count", shortcut_free=True)
    for index in range(4):
        assert_outline_tells_what_the_episode_tells(made.episode_outline(index), made.episode(index))


@pytest.mark.parametrize("config", NOT_OUTLINED)
def test_tasks_whose_clips_may_repeat_bytes_make_no_outline(config):
    # their twins (AudioRemap's MIX, a Morse letter's bank clip) come from the rendering
    assert builder(config).episode_outline(0) is None


def test_an_outline_clip_has_no_samples_to_read():
    clip = builder("audio_count").episode_outline(0)["query"]["clips"][0]["audio"]
    with pytest.raises(ValueError, match="episode outline, which has no audio"):
        _ = clip.samples
    assert repr(clip) == "UnrenderedClip('outline:audio_count:0:0:0:0', 16000)"  # a log line can show it


@pytest.mark.slow
@pytest.mark.parametrize("config", OUTLINED)
def test_the_shortcut_learns_the_same_from_outlines_as_from_episodes(config):
    (task,) = prepare_tasks(TaskRegistry.discover(), [f"audioicl_{config}"], num_fewshot=[0, 1, 3, 5],
                            task_args={}, limit=None, seed=0, gen_kwargs={})  # fmt: skip
    model = shortcut.ShortcutModel(seed=0)
    from_outlines = model.study(task)
    model.studies_audio = True  # the same study over the synthesized probe episodes
    assert model.study(task).describe() == from_outlines.describe()


def test_a_run_synthesizes_no_probe_episode_for_an_outlined_task(tmp_path):
    result = audioeval.evaluate(tasks=["audioicl_audio_count"], model="dsp-oracle", limit=2, num_fewshot=[0, 1],
                                cache_dir=str(tmp_path / "cache"), no_progress=True)  # fmt: skip
    assert result.record.timing["episodes_synthesized"] == 2  # the run's two episodes, no probe
    assert result.record.sections.reference_models["shortcut"]["audioicl_audio_count"]
