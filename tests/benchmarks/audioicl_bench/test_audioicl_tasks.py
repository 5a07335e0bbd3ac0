"""AudioICL-Bench task configs: groups, prompt styles and the paper and chat layouts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audioeval.benchmarks.audioicl_bench.configs import CONFIGS
from audioeval.config.registry import TaskRegistry
from audioeval.errors import ConfigError, DataError, UsageError
from audioeval.run.prepared import prepare_tasks
from audioeval.types import AudioPart

ROOT = Path(__file__).resolve().parents[3]

NINE = [
    "audioicl_audio_count",
    "audioicl_audio_count_hard",
    "audioicl_audio_operator",
    "audioicl_audio_operator_hard",
    "audioicl_audio_remap",
    "audioicl_anomaly_detect",
    "audioicl_audio_length",
    "audioicl_audio_length_hard",
    "audioicl_morse_code",
]


@pytest.fixture(scope="module")
def registry():
    return TaskRegistry.discover()


def prepare(registry, names, **task_args):
    args = {"n_episodes": 2, "max_shots": 5, **task_args}
    return {
        t.name: t
        for t in prepare_tasks(
            registry, names, num_fewshot=None, task_args=args, limit=None, seed=0, gen_kwargs={}
        )
    }


def text(messages) -> str:
    return "\n".join(
        f"<{m.role}>" + "".join("<AUDIO>" if isinstance(p, AudioPart) else p.text for p in m.parts)
        for m in messages
    )


def test_groups_and_defaults(registry):
    tasks, groups = registry.select("audioicl_bench")
    assert sorted(tasks) == sorted(NINE)
    assert groups == ["audioicl_bench", "audioicl_a2", "audioicl_a3"]
    assert registry.leaf_tasks("audioicl_a2") == NINE[:6] and registry.leaf_tasks("audioicl_a3") == NINE[6:]
    # a task named twice (directly and through its groups) is evaluated once
    tasks, _ = registry.select("audioicl_audio_count,audioicl_a2,audioicl_bench,audioicl_a3")
    assert sorted(tasks) == sorted(NINE)
    assert registry.leaf_tasks("audioicl_ablation") == ["audioicl_morse_letter"]
    for name in NINE:
        config = registry.tasks[name]
        assert config.num_fewshot == [0, 1, 3, 5]
        assert (
            config.generation_kwargs["max_new_tokens"] == 64
            and config.generation_kwargs["do_sample"] is False
        )
        assert config.parameters["prompt_style"].default == "specific"
    assert registry.tasks["audioicl_morse_letter"].num_fewshot == [0]


def test_every_config_has_its_task_and_its_instruction_and_nothing_else(registry):
    """The configs are listed once (configs.py); the task files and the instruction table follow that list."""
    tasks = {name for name, t in registry.tasks.items() if t.builder == "audioicl_bench"}
    assert tasks == {f"audioicl_{c}" for c in CONFIGS}
    assert all(registry.tasks[f"audioicl_{c}"].builder_config == c for c in CONFIGS)
    table = (ROOT / "tasks" / "audioicl_bench" / "_instructions.jinja").read_text()
    named = set(re.findall(r'^\s*"(\w+)":', table, flags=re.MULTILINE))
    assert named == set(CONFIGS)


def test_paper_layout_single_clip(registry):
    task = prepare(registry, ["audioicl_audio_count"])["audioicl_audio_count"]
    episode = task.episode(0)
    messages = task.renderer.render(episode, 2)
    assert len(messages) == 1 and messages[0].role == "user"
    body = text(messages)
    demos = episode["demos"]
    assert body.endswith(
        f"\n\n[Demo 1] <AUDIO> Label: {demos[0]['label']}\n[Demo 2] <AUDIO> Label: {demos[1]['label']}\n[Query] <AUDIO> Label:"
    )
    assert task.renderer.render_target(episode, 2) == episode["query"]["label"]


def test_paper_layout_multi_clip_tags(registry):
    tasks = prepare(registry, ["audioicl_audio_remap", "audioicl_anomaly_detect"])
    remap = tasks["audioicl_audio_remap"]
    ep = remap.episode(0)
    a, b = ep["metadata"]["letters"]["A"], ep["metadata"]["letters"]["B"]
    body = text(remap.renderer.render(ep, 1))
    assert re.search(
        rf"\[Demo 1 A\] <AUDIO> Label: {a}\n\[Demo 1 B\] <AUDIO> Label: {b}\n\[Demo 1 MIX\] <AUDIO> Label: [{a}{b}]{{3}}\n"
        rf"\[Query A\] <AUDIO> Label: {a}\n\[Query B\] <AUDIO> Label: {b}\n\[Query MIX\] <AUDIO> Label:$",
        body,
    )
    anomaly = tasks["audioicl_anomaly_detect"]
    body = text(anomaly.renderer.render(anomaly.episode(0), 1))
    assert body.endswith(
        "[Demo 1 Normal] <AUDIO> Label: Normal\n[Demo 1 Anomalous] <AUDIO> Label: Anomalous\n[Query] <AUDIO> Label:"
    )


def test_morse_bank_comes_first(registry):
    task = prepare(registry, ["audioicl_morse_code"])["audioicl_morse_code"]
    ep = task.episode(0)
    messages = task.renderer.render(ep, 1)
    body = text(messages)
    bank = "".join(f"[Letter {c}] <AUDIO> Label: {c}\n" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert bank + f"[Demo 1] <AUDIO> Label: {ep['demos'][0]['label']}\n[Query] <AUDIO> Label:" in body
    assert messages[0].clips[0] is ep["context"][0]["audio"] and len(messages[0].clips) == 28


def test_prompt_styles(registry):
    styles = {
        s: prepare(registry, ["audioicl_audio_count", "audioicl_audio_operator"], prompt_style=s)
        for s in ("specific", "general", None)
    }

    def instruction(style, name):
        task = styles[style][name]
        body = text(task.renderer.render(task.episode(0), 1))[len("<user>") :]
        return body.split("[Demo 1]")[0].strip()

    # specific == general for the count/length tasks by construction; not for AudioOperator
    assert instruction("specific", "audioicl_audio_count") == instruction("general", "audioicl_audio_count")
    assert instruction("specific", "audioicl_audio_operator") != instruction(
        "general", "audioicl_audio_operator"
    )
    assert "operation" in instruction("specific", "audioicl_audio_operator")
    assert not re.search(
        r"count|duration|length|second", instruction("general", "audioicl_audio_count"), re.I
    )
    assert instruction(None, "audioicl_audio_count") == "" == instruction(None, "audioicl_audio_operator")


PAPER_GENERAL = "Identify the hidden patterns and rules within the following audio-label pairs and apply them to the final query."


def test_general_instruction_is_the_papers_wording_and_the_answer_rule_an_option(registry):
    def instruction(name, **args):
        task = prepare(registry, [name], **args)[name]
        body = text(task.renderer.render(task.episode(0), 1))[len("<user>") :]
        return re.split(r"\[Demo 1|\[Letter A\]", body)[0].strip()

    assert instruction("audioicl_audio_operator", prompt_style="general") == PAPER_GENERAL
    assert instruction("audioicl_audio_count") == PAPER_GENERAL  # specific = general by construction
    with_rule = instruction("audioicl_audio_length_hard", answer_format="true")
    assert (
        with_rule
        == PAPER_GENERAL + " Answer with the query's label only, written the same way as the example labels."
    )
    assert instruction("audioicl_morse_code", prompt_style="general", answer_format="true") == with_rule
    # the task-specific instructions of the other tasks are not touched by the option
    assert instruction("audioicl_audio_remap", answer_format="true") == instruction("audioicl_audio_remap")


def test_null_prompting_skips_zero_shot_like_the_papers_table(registry, caplog):
    with caplog.at_level("WARNING", logger="audioeval"):
        tasks = prepare(registry, ["audioicl_audio_count", "audioicl_morse_code"], prompt_style=None)
    assert [t.shots for t in tasks.values()] == [[1, 3, 5], [1, 3, 5]]
    assert (
        "audioicl_audio_count: skipping k=[0] (this task needs k >= 1 with prompt_style=null)" in caplog.text
    )
    assert prepare(registry, ["audioicl_audio_count"], prompt_style="general")[
        "audioicl_audio_count"
    ].shots == [0, 1, 3, 5]
    with pytest.raises(UsageError, match="needs k >= 1 with prompt_style=null"):
        prepare_tasks(registry, ["audioicl_audio_count"], num_fewshot=[0], task_args={"prompt_style": "null"},
                      limit=None, seed=0, gen_kwargs={})  # fmt: skip


def test_chat_layout_turns(registry):
    tasks = prepare(
        registry, ["audioicl_audio_count", "audioicl_anomaly_detect", "audioicl_audio_remap"], layout="chat"
    )
    count = tasks["audioicl_audio_count"]
    ep = count.episode(0)
    messages = count.renderer.render(ep, 3)
    assert [m.role for m in messages] == ["user", "assistant"] * 3 + ["user"]
    assert [m.text for m in messages[1::2]] == [d["label"] for d in ep["demos"][:3]]
    anomaly = tasks["audioicl_anomaly_detect"]
    messages = anomaly.renderer.render(anomaly.episode(0), 2)
    assert [m.text for m in messages if m.role == "assistant"] == ["Normal", "Anomalous"] * 2
    remap = tasks["audioicl_audio_remap"]
    ep = remap.episode(0)
    messages = remap.renderer.render(ep, 2)
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[1].text == ep["demos"][0]["label"] and len(messages[-1].clips) == 3


@pytest.mark.slow
def test_label_spaces_cover_the_targets(registry):
    tasks = prepare(registry, [*NINE, "audioicl_morse_letter"])
    for name, task in tasks.items():
        for index in range(2):
            ep = task.episode(index)
            space = task.renderer.label_space(ep, 0)
            assert task.renderer.render_target(ep, 0) in space, name
    operator = tasks["audioicl_audio_operator"]
    assert 1 <= len(operator.renderer.label_space(operator.episode(0), 0)) <= 3


def test_bad_task_argument_is_rejected(registry):
    with pytest.raises(ConfigError, match="prompt_style"):
        prepare(registry, ["audioicl_audio_count"], prompt_style="verbose")
    with pytest.raises(ConfigError, match="layout"):
        prepare(registry, ["audioicl_audio_count"], layout="grid")


def test_task_arguments_reach_the_builder(registry):
    task = prepare(
        registry, ["audioicl_morse_letter"], morse_wpm=12, morse_tone_hz=800, n_episodes=3, max_shots=1
    )["audioicl_morse_letter"]
    assert task.builder.num_episodes() == 3 and len(task.episode(0)["demos"]) == 1
    assert task.episode(0)["metadata"]["morse"]["wpm"] == 12.0 and task.builder.config.osps_dir is None
    with pytest.raises(DataError, match="osps_dir=/no/such: no such folder"):
        prepare(registry, ["audioicl_audio_remap"], osps_dir="/no/such")
