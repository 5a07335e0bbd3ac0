"""The episode store's key changes with everything a task's episodes are a function of, and with nothing else
(shots, templates and generation settings are applied to the episode later); a task that reads local files is
never kept."""

from __future__ import annotations

import pytest

from audioeval.augment.plan import parse_augment
from audioeval.config.registry import TaskRegistry
from audioeval.run.conditions import with_conditions
from audioeval.run.episode_store import episode_key
from audioeval.run.prepared import prepare_tasks


def prepared(seed: int = 0, shots=(0, 1), task_args=None, augment=(), target=None):
    registry = TaskRegistry.discover([])
    tasks = prepare_tasks(
        registry, ["audioicl_audio_count"], num_fewshot=list(shots), task_args=task_args or {}, limit="2",
        seed=seed, gen_kwargs={},
    )  # fmt: skip
    return with_conditions(tasks, parse_augment(list(augment), target))


@pytest.mark.slow
def test_the_key_follows_seed_builder_parameters_and_condition_but_not_shots_or_prompts():
    (base,) = prepared()
    assert episode_key(base) == episode_key(prepared()[0])
    assert episode_key(base) != episode_key(prepared(seed=1)[0])
    assert episode_key(base, seed=1) == episode_key(prepared(seed=1)[0])  # a study's episodes: another seed
    assert episode_key(base) != episode_key(prepared(task_args={"shortcut_free": True})[0])
    # what is applied to the episode afterwards shares its episodes
    assert episode_key(base) == episode_key(prepared(shots=(0, 1, 3))[0])
    assert episode_key(base) == episode_key(prepared(task_args={"prompt_style": "general"})[0])
    _, on_query = prepared(augment=["noise_snr=5"])
    _, on_all = prepared(augment=["noise_snr=5"], target="all")
    _, other_level = prepared(augment=["noise_snr=10"])
    keys = {episode_key(t) for t in (base, on_query, on_all, other_level)}
    assert None not in keys and len(keys) == 4


def test_a_task_reading_a_corpus_folder_is_never_kept(tmp_path):
    (task,) = prepared()
    task.config.builder_kwargs["fsdd_dir"] = str(tmp_path)
    assert episode_key(task) is None
