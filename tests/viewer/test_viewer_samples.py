"""What the samples browser filters on and shows, for runs of each benchmark."""

from __future__ import annotations

from viewer_helpers import api, audio_parts, logged_audio, serve

from audioeval.viewer.samples import facets


def _summary(task: str, episode: int, **facts) -> dict:
    return {"task": task, "episode": episode, "facts": facts}


def test_facets_are_metadata_values_that_group_episodes():
    rows = [
        _summary("t", 0, domain="math", uid="t-0000", index=0, constraint="case:upper", level="easy"),
        _summary("t", 1, domain="math", uid="t-0001", index=1, constraint="case:lower", level="easy"),
        _summary("t", 2, domain="physics", uid="t-0002", index=2, constraint="json", level="easy"),
        _summary("u", 0, domain="code", uid="u-0000", index=0, constraint="json", level="hard"),
    ]
    found = facets(rows)
    assert found["domain"] == [["code", 1], ["math", 2], ["physics", 1]]  # shared by two episodes of t
    assert "constraint" in found  # unique per episode, but short codes such as constraint ids
    assert "uid" not in found and "index" not in found  # ids and numbers unique to each episode group nothing
    assert "level" not in found  # constant within each task: the task filter says as much
    assert facets(rows, max_values=2) == {}


def test_adu_samples_carry_domain_and_variation_facets_and_judge_verdicts(adu_run):
    with serve(adu_run) as server:
        data = api(server, "run/0/samples")
        samples = data["samples"]
        failed = next(s for s in samples if s["judge_failure"])
        judged = next(s for s in samples if s["judged"] and not s["judge_failure"])
        bad = api(server, f"run/0/sample/{failed['id']}")
        good = api(server, f"run/0/sample/{judged['id']}")
    assert {"domain", "variation.gender"} <= set(data["facets"])
    assert all("domain" in s["facts"] for s in samples)
    assert data["scores"]["adu_general"][0] == "score"
    row = good["verdicts"][0]
    assert row["judge"] == "judge-x" and row["role"] == "holistic" and row["value"] == 7.0
    assert row["raw"] == ["Score: 7", "Score: 7"]  # both orders of the position-swapped judging
    failure = bad["verdicts"][0]
    assert failure["failed"] and failure["value"] is None and "I would rather not say." in failure["raw"]
    assert good["response"].startswith("Here is my answer") and good["cached"] in (True, False)
    assert isinstance(good["latency_s"], float)


def test_alice_samples_show_system_turn_demos_and_query_with_labels(alice_run):
    record, logged = logged_audio(alice_run, "alice_s1_ser_ceq", 1)
    assert record["shots"] == 1
    with serve(alice_run) as server:
        data = api(server, "run/0/samples")
        detail = api(server, f"run/0/sample/alice_s1_ser_ceq/{record['episode']}/1")
    assert "instruction_id" in data["facets"]  # the constraint of each ALICE item
    roles = [m["role"] for m in detail["messages"]]
    assert roles[0] == "system" and "user" in roles
    parts = audio_parts(detail)
    assert [p["place"] for p in parts] == ["demo 1", "query"]
    assert parts[0]["label"] and parts[1]["label"] == record["target"]
    texts = [p["text"] for m in detail["messages"] for p in m["parts"] if p["type"] == "text"]
    logged_texts = [p["text"] for m in record["messages"] for p in m["content"] if p["type"] == "text"]
    assert texts == logged_texts  # the conversation exactly as logged, in order
    assert detail["prediction"] == record["prediction"] and detail["scores"] == record["scores"]


def test_audioicl_samples_list_each_task_and_k(audioicl_runs):
    with serve(*audioicl_runs) as server:
        oracle = api(server, "run/0/samples")
        chance = api(server, "run/1/samples")
    assert oracle["tasks"] == ["audioicl_audio_remap", "audioicl_audio_length"]
    assert oracle["shots"] == [0, 1, 3]
    assert len(oracle["samples"]) == len(chance["samples"]) == 2 * 3 * 3
    assert oracle["scores"]["audioicl_audio_remap"][0] == "accuracy"
    assert {s["id"] for s in oracle["samples"]} == {s["id"] for s in chance["samples"]}
