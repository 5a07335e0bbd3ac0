"""A rerun on the same cache serves episodes whose answers are all cached from the episode store, without
synthesizing them again, and its results and samples are those of a run that synthesized everything."""

from __future__ import annotations

import json

import pytest

from audioeval.run.conductor import RunConfig, run_evaluation
from tests.conftest import latest_run

TASKS = "audioicl_audio_count,audioicl_audio_operator"


def evaluate(tmp_path, name: str, limit: str = "3", **settings) -> dict:
    return run_evaluation(
        RunConfig(tasks=TASKS, model="dsp-oracle", limit=limit, num_fewshot=[0, 1, 3], show_progress=False,
                  bootstrap_resamples=100, output_path=str(tmp_path / name), log_samples=True, **settings)
    )  # fmt: skip


def synthesis(results: dict) -> dict[str, float]:
    return {task: t["synthesis_seconds"] for task, t in results["timing"]["tasks"].items()}


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
    assert all(s > 0 for s in synthesis(first).values())
    again = evaluate(tmp_path, "again", cache_dir=cache)
    assert synthesis(again) == {"audioicl_audio_count": 0.0, "audioicl_audio_operator": 0.0}
    assert again["timing"]["cached_responses"] == again["timing"]["samples"] == 2 * 3 * 3
    for section in ("results", "groups", "reference_models"):
        assert again[section] == first[section]
    assert samples(tmp_path, "again") == samples(tmp_path, "first")
    # more episodes: only the new ones are synthesized, and they score as a fresh run scores them
    more = evaluate(tmp_path, "more", limit="5", cache_dir=cache)
    fresh = evaluate(tmp_path, "fresh", limit="5", no_cache=True)
    assert more["results"] == fresh["results"]
    assert more["reference_models"] == fresh["reference_models"]
    assert samples(tmp_path, "more") == samples(tmp_path, "fresh")


@pytest.mark.slow
def test_episodes_whose_answers_are_gone_are_synthesized_again(tmp_path):
    cache = tmp_path / "cache"
    first = evaluate(tmp_path, "first", cache_dir=str(cache))
    for name in ("responses.sqlite", "responses.sqlite-wal", "responses.sqlite-shm"):
        (cache / name).unlink(missing_ok=True)
    again = evaluate(tmp_path, "again", cache_dir=str(cache))
    assert all(s > 0 for s in synthesis(again).values())
    assert again["timing"]["cached_responses"] == 0
    assert again["results"] == first["results"]
    assert samples(tmp_path, "again") == samples(tmp_path, "first")
