"""The ALICE builder on the built-in corpus: determinism, nested demonstrations, pool balance and disjointness,
the alignment rewrite, and how the three stages render."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from audioeval.benchmarks.alice import banks as B
from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.corpus import BuiltinCorpus
from audioeval.benchmarks.alice.demos import (
    demo_order,
    realign_end_answer,
    realign_repeat_answer,
    replace_quoted_phrase,
)
from audioeval.config.registry import TaskRegistry
from audioeval.config.templates import PromptRenderer
from audioeval.data.builders import make_builder
from audioeval.types import AudioPart, TextPart
from tests.alice_testutil import isolated_cache  # noqa: F401

SMALL = {"n_per_constraint": 2, "n_cot": 4}


def builder(config, **kwargs):
    return make_builder("alice", config, {**SMALL, **kwargs})


def _fingerprint(episode):
    return (
        episode["id"],
        episode["query"]["task_text"],
        episode["query"]["constraint_text"],
        episode["query"]["label"],
        episode["query"]["clips"][0]["audio"].sha256,
        [
            (d["pool_id"], d["answer"], d["constraint_text"], d["clips"][0]["audio"].sha256)
            for d in episode["demos"]
        ],
    )


def test_episodes_are_a_pure_function_of_config_seed_and_index():
    a, b = builder("ser_ceq"), builder("ser_ceq")
    for i in (0, 5, 13):
        assert _fingerprint(a.episode(i)) == _fingerprint(b.episode(i))
    other_seed = builder("ser_ceq", seed=1)
    assert [d["pool_id"] for d in other_seed.episode(5)["demos"]] != [
        d["pool_id"] for d in a.episode(5)["demos"]
    ]


def test_counts_are_builder_parameters():
    assert builder("asr_ceq").num_episodes() == 2 * len(C.CEQ_IDS)
    assert builder("gr_cot").num_episodes() == 4
    assert make_builder("alice", "mmau_ceq", {}).num_episodes() == 4 * len(C.CEQ_IDS)
    assert builder("asr_ceq", n_episodes=3).num_episodes() == 3


def test_demo_sets_are_nested_across_k_with_a_seed_per_item():
    full = builder("gr_ceq")
    short = builder("gr_ceq", max_shots=3)
    by_constraint: dict[str, list[tuple[str, ...]]] = {}
    for i in range(full.num_episodes()):
        episode = full.episode(i)
        ids = [d["pool_id"] for d in episode["demos"]]
        assert len(ids) == 8 and len(set(ids)) == 8
        assert [d["pool_id"] for d in short.episode(i)["demos"]] == ids[:3]
        by_constraint.setdefault(episode["metadata"]["instruction_id"], []).append(tuple(ids))
    # the seed follows the item's rank within its constraint (upstream: 42 + index), so orders differ
    for orders in by_constraint.values():
        assert len(orders) == 2 and orders[0] != orders[1]


def test_shuffle_reproduces_upstreams_random_seed_42_plus_index():
    for rank in range(5):
        pool = list(range(8))
        random.seed(42 + rank)
        random.shuffle(pool)
        assert demo_order(8, 0, rank) == pool


def test_demos_share_task_category_constraint_and_mmau_sub_category():
    for config in ("asr_ceq", "ser_cot", "mmau_ceq", "mmau_cot"):
        b = builder(config)
        for i in range(b.num_episodes()):
            ep = b.episode(i)
            meta = ep["metadata"]
            for demo in ep["demos"]:
                task, category, iid, *rest = demo["pool_id"].split("/")[1:]
                assert (task, category, iid) == (meta["task"], meta["category"], meta["instruction_id"])
                if meta["task"] == "mmau":
                    assert rest[0] == meta["sub_category"]


def test_pool_is_label_balanced():
    pool = BuiltinCorpus().pool()
    for (task, _category, _iid, _, _), entries in pool.items():
        if task == "ser":
            assert Counter(e.answer_plain for e in entries) == {e: 2 for e in B.EMOTIONS}
        if task == "gr":
            genders = Counter(e.source["facts"]["gender"] for e in entries)
            assert genders == {"male": 4, "female": 4}


def test_pool_is_disjoint_from_the_evaluation_items():
    corpus = BuiltinCorpus(n_per_constraint=1, n_cot=4)
    eval_audio, eval_texts = set(), set()
    for task in ("asr", "ser", "gr", "mmau"):
        for category in ("ceq", "cot"):
            for item in corpus.items(task, category):
                eval_audio.add(item.audio.describe)
                eval_texts.add(item.task_text)
    for entries in corpus.pool().values():
        for entry in entries:
            assert entry.audio.describe not in eval_audio
            assert entry.task_text not in eval_texts
    assert not set(B.EVAL_SENTENCES) & set(B.DEMO_SENTENCES)
    assert not set(B.TEST_REPEAT_PHRASES) & set(B.DEMO_REPEAT_PHRASES)
    assert not set(B.TEST_END_PHRASES) & set(B.DEMO_END_PHRASES)
    assert not set(B.TEST_COT) & set(B.DEMO_COT)


def test_demo_banks_have_at_least_ten_phrasings():
    assert all(len(B.DEMO_CONSTRAINT[i]) >= 10 for i in C.CEQ_IDS)
    assert len(B.DEMO_TASK["asr"]) >= 10 and len(B.DEMO_TASK["ser"]) >= 10
    assert len(B.DEMO_TASK["gr:man"]) + len(B.DEMO_TASK["gr:male"]) >= 10
    assert all(len(v) >= 10 for v in B.MMAU_DEMO_QUESTION.values())
    assert len(B.DEMO_COT) >= 10 and len(B.DEMO_REPEAT_PHRASES) >= 10 and len(B.DEMO_END_PHRASES) >= 10


def test_demo_answers_are_formatted_per_constraint():
    pool = BuiltinCorpus().pool()
    first = {key[2]: entries[0] for key, entries in pool.items() if key[0] == "ser"}
    plain = first[C.CAPITAL].answer_plain
    assert first[C.CAPITAL].answer == first[C.CAPITAL].answer_plain.upper()
    assert first[C.LOWERCASE].answer.islower()
    assert first[C.JSON_FORMAT].answer.startswith('{"Emotion": ')
    assert first[C.QUOTATION].answer.startswith('"') and first[C.QUOTATION].answer.endswith('"')
    assert first[C.TITLE].answer.startswith("<<") and first[C.TITLE].answer.endswith(">>")
    assert first[C.END_CHECKER].answer.split("\n")[1] in B.DEMO_END_PHRASES
    assert first[C.CHAIN_OF_THOUGHT].answer.rstrip(".").endswith(first[C.CHAIN_OF_THOUGHT].answer_plain)
    assert plain in B.EMOTIONS
    mmau_end = next(e for k, v in pool.items() if k[0] == "mmau" and k[2] == C.END_CHECKER for e in v)
    assert ". " in mmau_end.answer and "\n" not in mmau_end.answer  # MMAU: "<ans>. <end phrase>"


@pytest.mark.parametrize("config", ["ser_ceq", "mmau_ceq"])
def test_repeat_and_end_demos_are_aligned_to_the_items_phrase(config):
    b = builder(config)
    checked = 0
    for i in range(b.num_episodes()):
        ep = b.episode(i)
        meta = ep["metadata"]
        phrase = C.phrase_of(meta["instruction_id"], meta["kwargs"])
        if phrase is None:
            continue
        for demo in ep["demos"]:
            assert f'"{phrase}"' in demo["constraint_text"]
            if meta["instruction_id"] == C.REPEAT_PROMPT:
                assert demo["answer"].startswith(phrase + " ")
            else:
                assert demo["answer"].endswith(phrase)
            checked += 1
    assert checked >= 2 * 8 * 2
    unaligned = builder(config, align_demos=False)
    ep = next(unaligned.episode(i) for i in range(10) if unaligned.episode(i)["metadata"]["kwargs"])
    phrase = C.phrase_of(ep["metadata"]["instruction_id"], ep["metadata"]["kwargs"])
    assert not any(phrase in d["answer"] for d in ep["demos"])


def test_alignment_rewrites_real_pool_text_like_upstream():
    assert replace_quoted_phrase('Begin with "Verdict:" please.', "Answer:") == 'Begin with "Answer:" please.'
    assert realign_repeat_answer(
        "After assessment, the answer is:male", "After assessment, the answer is:", "Answer:"
    ) == ("Answer: male")
    assert realign_repeat_answer("Note: it is x", None, "Result\n") == "Result\nit is x"
    assert (
        realign_end_answer("angry\nIs there anything else?", "Is there anything else?", "Bye.", "ser")
        == "angry\nBye."
    )
    assert realign_end_answer("three This is all.", None, "Bye.", "mmau") == "three. Bye."


# --- stages -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def registry():
    return TaskRegistry.discover()


def _render(registry, task, episode, k):
    config = registry.tasks[task].with_params({**SMALL}, "test")
    return PromptRenderer(config).render(episode, k)


def _texts(message):
    return "".join(p.text for p in message.parts if isinstance(p, TextPart))


def test_stage1_shows_task_and_constraint_everywhere(registry):
    ep = builder("ser_ceq").episode(0)  # a capital-letters item
    messages = _render(registry, "alice_s1_ser_ceq", ep, 2)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "2 example pairs" in _texts(messages[0])
    for user, demo in zip(messages[1:5:2], ep["demos"], strict=False):
        assert isinstance(user.parts[0], AudioPart)
        assert _texts(user) == demo["task_text"] + "\n" + demo["constraint_text"]
    assert messages[2].text == ep["demos"][0]["answer"] and messages[2].text.isupper()
    assert _texts(messages[-1]) == ep["query"]["task_text"] + "\n" + ep["query"]["constraint_text"]
    zero = _render(registry, "alice_s1_ser_ceq", ep, 0)
    assert [m.role for m in zero] == ["system", "user"]


def test_stage2_drops_constraint_text_but_keeps_formatted_answers(registry):
    b = builder("gr_ceq")
    ep = next(
        b.episode(i) for i in range(b.num_episodes()) if b.episode(i)["metadata"]["instruction_id"] == C.TITLE
    )
    messages = _render(registry, "alice_s2_gr_ceq", ep, 3)
    users = [m for m in messages if m.role == "user"]
    for user in users:
        assert "angular" not in _texts(user).lower() and "<<" not in _texts(user)
    assert [_texts(u) for u in users[:-1]] == [d["task_text"] for d in ep["demos"][:3]]
    assert _texts(users[-1]) == ep["query"]["task_text"]
    answers = [m.text for m in messages if m.role == "assistant"]
    assert answers and all(a.startswith("<<") and a.endswith(">>") for a in answers)
    assert registry.tasks["alice_s2_gr_ceq"].min_shots == 1


def test_stage3_has_no_text_in_user_turns(registry):
    ep = builder("asr_cot").episode(1)
    messages = _render(registry, "alice_s3_asr_cot", ep, 4)
    users = [m for m in messages if m.role == "user"]
    assert len(users) == 5
    assert all(all(isinstance(p, AudioPart) for p in u.parts) and len(u.parts) == 1 for u in users)
    assert [m.text for m in messages if m.role == "assistant"] == [d["answer"] for d in ep["demos"][:4]]
    assert registry.tasks["alice_s3_asr_cot"].min_shots == 1
    assert not any(name.startswith("alice_s3_mmau") for name in registry.tasks)


def test_stage_groups_and_default_shots(registry):
    assert registry.groups["alice"].members == ["alice_stage1", "alice_stage2", "alice_stage3"]
    assert len(registry.leaf_tasks("alice_stage1")) == 8 and len(registry.leaf_tasks("alice_stage3")) == 6
    assert registry.tasks["alice_s1_mmau_cot"].num_fewshot == list(range(9))
    assert registry.tasks["alice_s2_mmau_cot"].num_fewshot == list(range(1, 9))
    assert registry.tasks["alice_s1_asr_ceq"].aggregation == {"wer": {"ratio": ["wer_errors", "wer_words"]}}


def test_demo_pool_config_is_not_an_evaluation_task():
    from audioeval.errors import ConfigError

    pool = make_builder("alice", "demo_pool", {})
    assert pool.num_episodes() == 56 * 8
    with pytest.raises(ConfigError, match="not an evaluation task"):
        pool.episode(0)
