"""Episodes are synthesized once per configuration: a rerun, or another model on the same cache, reads them
(and the `shortcut` reference model's probe episodes) from the episode store and synthesizes nothing, with
the results and samples of a run that synthesized everything; a damaged or edited row is a miss."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest

from audioeval.run.conductor import RunConfig, run_evaluation
from tests.conftest import latest_run

TASKS = "audioicl_audio_count,audioicl_audio_remap"
PROBES = 40  # shortcut's probe episodes of AudioRemap (AudioCount's are outlines: nothing synthesized)


def evaluate(tmp_path, name: str, limit: str = "3", model: str = "dsp-oracle", **settings) -> dict:
    return run_evaluation(
        RunConfig(tasks=TASKS, model=model, limit=limit, num_fewshot=[0, 1, 3], show_progress=False,
                  bootstrap_resamples=100, output_path=str(tmp_path / name), log_samples=True, **settings)
    )  # fmt: skip


def synthesized(results: dict) -> dict[str, int]:
    return {task: t["episodes_synthesized"] for task, t in results["timing"]["tasks"].items()}


def samples(tmp_path, name: str) -> list[dict]:
    run = latest_run(tmp_path / name)
    rows = []
    for path in sorted(run.glob("samples_*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            row.pop("latency_s"), row.pop("cached")
            rows.append(row)
    return rows


@pytest.mark.slow
def test_a_rerun_synthesizes_nothing_and_reports_the_same(tmp_path):
    cache = str(tmp_path / "cache")
    first = evaluate(tmp_path, "first", cache_dir=cache)
    assert synthesized(first) == {"audioicl_audio_count": 3, "audioicl_audio_remap": 3}
    assert first["timing"]["episodes_synthesized"] == 6 + PROBES
    again = evaluate(tmp_path, "again", cache_dir=cache)
    assert again["timing"]["episodes_synthesized"] == 0
    assert again["timing"]["cached_responses"] == again["timing"]["samples"] == 2 * 3 * 3
    for section in ("results", "groups", "reference_models"):
        assert again[section] == first[section]
    assert samples(tmp_path, "again") == samples(tmp_path, "first")
    # more episodes: only the new ones are synthesized, and they score as a fresh run scores them
    more = evaluate(tmp_path, "more", limit="5", cache_dir=cache)
    assert synthesized(more) == {"audioicl_audio_count": 2, "audioicl_audio_remap": 2}
    assert more["timing"]["episodes_synthesized"] == 4  # the probe episodes were kept
    fresh = evaluate(tmp_path, "fresh", limit="5", no_cache=True)
    assert more["results"] == fresh["results"]
    assert more["reference_models"] == fresh["reference_models"]
    assert samples(tmp_path, "more") == samples(tmp_path, "fresh")


def test_another_model_on_the_same_cache_synthesizes_nothing(tmp_path):
    cache = str(tmp_path / "cache")
    evaluate(tmp_path, "first", cache_dir=cache)
    second = evaluate(tmp_path, "second", model="knn-icl", cache_dir=cache)
    assert second["timing"]["episodes_synthesized"] == 0  # nor the shortcut's probe episodes
    assert second["timing"]["cached_responses"] == 0  # every answer of the new model computed
    alone = evaluate(tmp_path, "alone", model="knn-icl", no_cache=True)
    for section in ("results", "groups", "reference_models"):
        assert second[section] == alone[section]
    assert samples(tmp_path, "second") == samples(tmp_path, "alone")


@pytest.mark.slow
def test_episodes_whose_answers_are_gone_are_read_back_and_answered_again(tmp_path):
    cache = tmp_path / "cache"
    first = evaluate(tmp_path, "first", cache_dir=str(cache))
    for name in ("responses.sqlite", "responses.sqlite-wal", "responses.sqlite-shm"):
        (cache / name).unlink(missing_ok=True)
    again = evaluate(tmp_path, "again", cache_dir=str(cache))
    assert again["timing"]["episodes_synthesized"] == 0
    assert again["timing"]["cached_responses"] == 0
    assert again["results"] == first["results"]
    assert samples(tmp_path, "again") == samples(tmp_path, "first")


def _edit(cache, sql: str, *params) -> None:
    db = sqlite3.connect(cache / "episodes.sqlite")
    with db:
        db.execute(sql, params)
    db.close()


def _first_row(cache) -> tuple[str, int, str]:
    db = sqlite3.connect(cache / "episodes.sqlite")
    config, episode, body = db.execute(
        "SELECT config, episode, body FROM episode_rows ORDER BY rowid"
    ).fetchone()
    db.close()
    return config, episode, body


def _edited_target(body: str) -> str:
    row = json.loads(body)
    row["episode"]["query"]["label"] = "999"  # still valid JSON, still the store's shape: a changed target
    return json.dumps(row, sort_keys=True)


@pytest.mark.parametrize(
    "damage",
    [
        "edited target",
        *(pytest.param(d, marks=pytest.mark.slow) for d in ("null", "a dict", "missing keys", "not json")),
        pytest.param("damaged audio", marks=pytest.mark.slow),
    ],
)
def test_a_damaged_or_edited_row_is_synthesized_again_with_one_warning(tmp_path, caplog, damage):
    cache = tmp_path / "cache"
    first = evaluate(tmp_path, "first", cache_dir=str(cache))
    config, episode, body = _first_row(cache)
    if damage == "damaged audio":
        _edit(cache, "UPDATE clips SET data = ? ", b"\x78\x9c not zlib")
    else:
        text = {
            "null": "null",
            "a dict": json.dumps({"x": 1}),
            "missing keys": json.dumps({"episode": json.loads(body)["episode"]}),
            "edited target": _edited_target(body),
            "not json": "{not json",
        }[damage]
        _edit(
            cache, "UPDATE episode_rows SET body = ? WHERE config = ? AND episode = ?", text, config, episode
        )
    (cache / "responses.sqlite").unlink()  # every answer computed again, so the audio is read
    for name in ("responses.sqlite-wal", "responses.sqlite-shm"):
        (cache / name).unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        again = evaluate(tmp_path, "again", cache_dir=str(cache))
    warned = [r.getMessage() for r in caplog.records if "episode store" in r.getMessage()]
    assert len(warned) == 1 and "synthesized again" in warned[0]
    if damage != "damaged audio":
        assert again["timing"]["episodes_synthesized"] == 1  # that row alone
    assert again["results"] == first["results"]
    assert samples(tmp_path, "again") == samples(tmp_path, "first")


@pytest.mark.slow
def test_a_warm_run_synthesizes_not_even_the_episode_preflight_renders(tmp_path, monkeypatch):
    from audioeval.run.prepared import PreparedTask

    monkeypatch.setenv("AUDIOEVAL_SYNTHESIS_WORKERS", "0")  # every episode made here, where it is counted
    cache = str(tmp_path / "cache")
    evaluate(tmp_path, "cold", limit="2", cache_dir=cache)
    made = []
    original = PreparedTask.episode
    monkeypatch.setattr(
        PreparedTask, "episode", lambda self, i: made.append((self.name, i)) or original(self, i)
    )
    evaluate(tmp_path, "warm", limit="2", model="chance", cache_dir=cache)
    assert made == []  # preflight's first episodes came from the store too
    assert samples(tmp_path, "warm") and all(row["response"] for row in samples(tmp_path, "warm"))
