"""Reading a local Speech-IFEval / ALICE copy: the happy path and every validation error, each naming its file
and line (or JSON path)."""

from __future__ import annotations

import json
import re

import pytest

from audioeval.data.builders import make_builder
from audioeval.errors import DataError
from tests.alice_testutil import CAPITAL, END, REPEAT, isolated_cache, tone_wav, write_layout  # noqa: F401


def local(root, config, **kwargs):
    return make_builder("alice", config, {"data_dir": str(root), "max_shots": 4, **kwargs})


def test_reads_items_pool_and_aligns_demos(tmp_path):
    root = write_layout(tmp_path / "alice")
    ser = local(root, "ser_ceq")
    assert ser.num_episodes() == 2
    capital = ser.episode(0)
    assert capital["query"]["task_text"].startswith("What emotion is expressed?")
    assert capital["query"]["constraint_text"] == "Answer in capital letters only."
    assert capital["query"]["label"] == "sad"
    assert capital["metadata"]["source"]["line"] == 1
    assert sorted(d["answer"] for d in capital["demos"]) == ["ANGRY", "HAPPY", "NEUTRAL", "SAD"]
    assert capital["query"]["clips"][0]["audio"].sampling_rate == 16000

    repeat = ser.episode(1)  # the pool says "Verdict:angry"; the item's phrase is "The answer is:"
    for demo in repeat["demos"]:
        assert demo["constraint_text"] == 'Begin with "The answer is:".'
        assert demo["answer"] in {
            "The answer is: angry",
            "The answer is: sad",
            "The answer is: happy",
            "The answer is: neutral",
        }

    asr = local(root, "asr_ceq").episode(0)
    assert {d["answer"].split("\n")[1] for d in asr["demos"]} == {"Hope this helps."}
    assert asr["query"]["choices"][0] == "HELLO THERE WORLD"

    mmau = local(root, "mmau_ceq").episode(0)
    assert mmau["metadata"]["sub_category"] == "Speaker Counting"
    assert mmau["demos"][0]["answer"] == '{"Content": "one"}'
    assert mmau["query"]["choices"] == ["one", "two", "three"]


def test_cot_label_is_derived_from_textual_audio_when_missing(tmp_path):
    root = write_layout(tmp_path / "alice")
    episode = local(root, "ser_cot").episode(0)
    assert episode["query"]["label"] == "happy"
    assert episode["query"]["constraint_text"] == "Think step by step."


def test_pool_lists_shorter_than_max_shots_are_reported(tmp_path):
    root = write_layout(tmp_path / "alice")
    with pytest.raises(DataError, match=r"has 4 demonstration\(s\) but max_shots=8; lower it"):
        make_builder("alice", "ser_ceq", {"data_dir": str(root)})


def test_missing_data_dir_and_files(tmp_path):
    with pytest.raises(DataError, match="not a folder"):
        local(tmp_path / "nowhere", "ser_ceq")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="CEQ file .* not found. Give data_dir="):
        local(tmp_path / "empty", "ser_ceq")


def _row(**changes):
    row = {
        "id": 9,
        "audio_filepath": "Speech_emotion_recognition/ser0.wav",
        "instruction": "Which emotion?\nAnswer in capital letters only.",
        "dataset": "Speech_emotion_recognition",
        "metric": "accuracy",
        "instruction_id_list": [CAPITAL],
        "kwargs": [{}],
        "label": "sad",
    }
    row.update(changes)
    return row


@pytest.mark.parametrize(
    "bad_row, message",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (_row(dataset="Speaker_verification"), "field 'dataset' is 'Speaker_verification'"),
        (_row(audio_filepath="Speech_emotion_recognition/missing.wav"), "audio file .*missing.wav not found"),
        (_row(instruction_id_list=["startend:upside_down"]), "unknown instruction id 'startend:upside_down'"),
        (_row(instruction_id_list=["keywords:existence"]), "a creative-writing constraint"),
        (_row(instruction_id_list=[CAPITAL, END]), "exactly one id"),
        (_row(instruction_id_list=[REPEAT], kwargs=[{}]), "needs the argument 'prompt_to_repeat'"),
        (_row(kwargs=[{"end_phrase": "Bye."}]), "takes no argument 'end_phrase'"),
        (_row(instruction="Which emotion? Answer in capitals."), "on separate lines"),
        (_row(label=""), "field 'label' is missing or empty"),
        (_row(kwargs=["not an object"]), "must be a JSON object"),
    ],
    ids=[
        "json",
        "not-object",
        "dataset",
        "missing-audio",
        "unknown-id",
        "cw-id",
        "two-ids",
        "kwargs-missing",
        "kwargs-extra",
        "one-line",
        "label",
        "kwargs-type",
    ],
)
def test_each_malformed_row_is_reported_with_file_and_line(tmp_path, bad_row, message):
    good = _row()
    root = write_layout(tmp_path / "alice", ceq_rows=[good, bad_row])
    with pytest.raises(DataError) as err:
        local(root, "ser_ceq")
    text = str(err.value)
    assert re.search(r"closed_ended_questions_corrected_filtered\.jsonl:2: ", text), text
    assert re.search(message, text), text
    assert "jsonl:1:" not in text  # the good row is not blamed


def test_undecodable_audio_is_reported(tmp_path):
    root = write_layout(tmp_path / "alice")
    (root / "data" / "audios" / "Speech_emotion_recognition" / "ser0.wav").write_bytes(
        b"RIFF\x00garbage" * 10
    )
    with pytest.raises(DataError, match=r"jsonl:1: .*ser0\.wav: the audio file cannot be decoded"):
        local(root, "ser_ceq")
    assert local(root, "ser_ceq", check_audio=False).num_episodes() == 2  # the check can be skipped


def test_mmau_item_missing_from_the_sub_category_maps(tmp_path):
    root = write_layout(tmp_path / "alice")
    tone_wav(root / "data" / "audios" / "MMAU" / "uuid-9.wav")
    row = _row(
        dataset="MMAU", audio_filepath="MMAU/uuid-9.wav", label="two", instruction="How many?\nUse JSON."
    )
    row["instruction_id_list"] = ["detectable_format:json_format"]
    write_layout(root, ceq_rows=[_row(), row])
    with pytest.raises(
        DataError, match=r"jsonl:2: MMAU item uuid-9 is in none of the id -> sub-category maps"
    ):
        local(root, "mmau_ceq")


def test_several_problems_are_reported_together(tmp_path):
    root = write_layout(tmp_path / "alice", ceq_rows=[_row(label=""), "{", _row(dataset="X")])
    with pytest.raises(DataError, match="3 problem") as err:
        local(root, "ser_ceq")
    for line in (1, 2, 3):
        assert f"jsonl:{line}:" in str(err.value)


def test_pool_problems_name_the_json_path(tmp_path):
    root = write_layout(tmp_path / "alice")
    pool_file = root / "in-context-examples" / "ICL_examples.json"
    pool = json.loads(pool_file.read_text())
    del pool["SER"]["closed_ended_questions"][REPEAT]
    pool_file.write_text(json.dumps(pool))
    with pytest.raises(
        DataError,
        match=r"no demonstration list at \['SER'\]\['closed_ended_questions'\]\['combination:repeat_prompt'\]",
    ):
        local(root, "ser_ceq")

    pool = json.loads(pool_file.read_text())
    pool["SER"]["closed_ended_questions"][REPEAT] = [
        {"audio_path": "general/404.wav", "instruction": "x\ny", "ans": 3}
    ]
    pool_file.write_text(json.dumps(pool))
    with pytest.raises(DataError) as err:
        local(root, "ser_ceq")
    assert "['combination:repeat_prompt'][0]: audio file" in str(err.value)
    assert "'ans' must be a non-empty string, got int" in str(err.value)

    pool_file.write_text('{"SER": ')
    with pytest.raises(DataError, match=r"ICL_examples.json:1: the demonstration pool is not valid JSON"):
        local(root, "ser_ceq")


def test_build_from_a_local_copy(tmp_path):
    """The Hub export reads the same local copy (task configs and the demonstration pool)."""
    from audioeval.cli import main

    root = write_layout(tmp_path / "alice")
    out = tmp_path / "hub"
    code = main(
        [
            "build",
            "alice",
            "--output_dir",
            str(out),
            "--configs",
            "ser_ceq,demo_pool",
            "--max_shots",
            "4",
            "--builder_args",
            f"data_dir={root}",
        ]
    )
    assert code == 0
    assert (out / "ser_ceq").is_dir() and (out / "demo_pool").is_dir()


def test_cli_runs_on_a_local_copy(tmp_path):
    from audioeval.cli import main

    root = write_layout(tmp_path / "alice")
    out = tmp_path / "out"
    code = main(
        ["--tasks", "alice_s1_ser_ceq,alice_s2_mmau_ceq", "--model", "chance", "--num_fewshot", "0,1,4"]
        + ["--task_args", f"data_dir={root},max_shots=4", "--output_path", str(out), "--no_cache"]
        + ["--bootstrap_iters", "50", "--no_progress"]
    )
    assert code == 0
    (results_file,) = out.glob("*/*/results.json")
    results = json.loads(results_file.read_text())["results"]
    assert results["alice_s1_ser_ceq"]["4-shot"]["n"] == 2
    assert results["alice_s2_mmau_ceq"]["1-shot"]["n"] == 1


def test_limit_on_a_local_copy_is_stratified_over_constraints(tmp_path):
    """The files list each constraint's items together; `--limit N` must still sample every constraint, in
    proportion to its share."""
    from audioeval.cli import main

    ser_q = 'What emotion is expressed? Choose the answer from "neutral", "happy", "sad" or "angry".'

    def row(i, iid, kwargs, constraint):
        return {
            "id": i,
            "audio_filepath": f"Speech_emotion_recognition/ser{i % 3}.wav",
            "instruction": f"{ser_q}\n{constraint}",
            "dataset": "Speech_emotion_recognition",
            "metric": "accuracy",
            "instruction_id_list": [iid],
            "kwargs": [kwargs],
            "label": "sad",
        }

    rows = [row(i, CAPITAL, {}, "Answer in capital letters.") for i in range(4)]
    rows += [row(4 + i, REPEAT, {"prompt_to_repeat": "Answer:"}, 'Start with "Answer:".') for i in range(2)]
    root = write_layout(tmp_path / "alice", ceq_rows=rows)
    builder = local(root, "ser_ceq")
    order = [builder.episode(i)["metadata"] for i in range(builder.num_episodes())]
    assert [(m["instruction_id"], m["source"]["line"]) for m in order] == [
        (CAPITAL, 1), (REPEAT, 5), (CAPITAL, 2), (CAPITAL, 3), (REPEAT, 6), (CAPITAL, 4)
    ]  # fmt: skip

    out = tmp_path / "out"
    code = main(
        ["--tasks", "alice_s1_ser_ceq", "--model", "chance", "--num_fewshot", "1", "--limit", "3"]
        + ["--task_args", f"data_dir={root},max_shots=4", "--output_path", str(out), "--no_cache"]
        + ["--bootstrap_iters", "0", "--no_progress"]
    )
    assert code == 0
    (results_file,) = out.glob("*/*/results.json")
    block = json.loads(results_file.read_text())["results"]["alice_s1_ser_ceq"]["1-shot"]
    assert block["n"] == 3
    # 2 capital-letter items and 1 repeat-prompt item (the other groups have none)
    assert block["format_strict_change_case_missing"] == 1 and block["format_strict_startend_missing"] == 2


def test_stratified_order_is_round_robin_for_equal_strata_and_proportional_otherwise():
    from audioeval.benchmarks.alice.items import stratified_order

    equal = [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0), ("c", 1)]
    assert stratified_order(equal, lambda x: x[0]) == [
        ("a", 0),
        ("b", 0),
        ("c", 0),
        ("a", 1),
        ("b", 1),
        ("c", 1),
    ]
    skewed = [("json", i) for i in range(6)] + [("title", 0), ("title", 1)]
    first4 = stratified_order(skewed, lambda x: x[0])[:4]
    assert first4 == [("json", 0), ("title", 0), ("json", 1), ("json", 2)]
