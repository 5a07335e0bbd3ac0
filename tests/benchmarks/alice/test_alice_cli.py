"""End to end: the CLI with `chance`, the report files, bad responses through the whole harness, and the
Hub-layout build read back with `datasets.load_dataset`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from audioeval.cli import main
from audioeval.data.builders import make_builder
from audioeval.models.base import Model
from audioeval.types import Request, Response
from tests.alice_testutil import isolated_cache  # noqa: F401


def _run(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "out"
    code = main(
        [*args, "--output_path", str(out), "--cache_dir", str(tmp_path / "cache"), "--bootstrap_iters", "100"]
        + ["--no_progress", "--log_samples"]
    )
    assert code == 0
    (run_dir,) = [p for p in (out).glob("*/*") if p.is_dir()]
    return run_dir


@pytest.mark.slow
def test_cli_run_with_chance_writes_results_samples_and_report(tmp_path):
    tasks = "alice_s1_ser_ceq,alice_s2_asr_ceq,alice_s3_gr_cot,alice_s1_mmau_ceq"
    run_dir = _run(tmp_path, "--tasks", tasks, "--model", "chance", "--limit", "3", "--num_fewshot", "0,1,2")
    results = json.loads((run_dir / "results.json").read_text())["results"]
    assert set(results["alice_s1_ser_ceq"]) == {"0-shot", "1-shot", "2-shot"}
    assert set(results["alice_s2_asr_ceq"]) == {"1-shot", "2-shot"}  # no zero-shot after stage 1
    ser = results["alice_s1_ser_ceq"]["1-shot"]
    assert ser["n"] == 3 and 0 <= ser["accuracy"] <= 1 and 0 <= ser["format_strict"] <= 1
    assert results["alice_s2_asr_ceq"]["2-shot"]["wer"] >= 0
    assert results["alice_s3_gr_cot"]["1-shot"]["format_strict"] is None  # no judge: missing, not zero
    samples = [json.loads(line) for line in (run_dir / "samples_alice_s1_ser_ceq.jsonl").open()]
    assert len(samples) == 9 and samples[0]["target"] in ("neutral", "happy", "sad", "angry")
    for name in (
        "alice_report.md",
        "alice_fcr.json",
        "alice_task_performance_ceq.png",
        "alice_task_performance_cot.png",
    ):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "alice_task_performance_ceq.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (run_dir / "alice_report.md").read_text()
    assert "| chance |" in report and "Task Group A" in report


@pytest.mark.slow
def test_full_group_fills_table_2(tmp_path):
    run_dir = _run(
        tmp_path, "--tasks", "alice", "--model", "chance", "--limit", "1", "--num_fewshot", "0,1,3"
    )
    cells = json.loads((run_dir / "alice_fcr.json").read_text())["cells"]
    assert len(cells) == 12
    by_key = {(c["group"], c["setting"], c["stage"]): c for c in cells}
    # without a judge only the CEQ items count: one per task
    assert by_key[("A", "zero-shot", 1)]["n"] == 4
    assert by_key[("B", "few-shot", 3)]["n"] == 3
    assert by_key[("A", "few-shot", 2)]["tasks"] == [
        "alice_s2_asr_ceq",
        "alice_s2_ser_ceq",
        "alice_s2_gr_ceq",
        "alice_s2_mmau_ceq",
    ]
    for cell in cells:
        lo, hi = cell["ci95"]
        assert lo <= cell["value"] <= hi
        assert cell["categories"] == ["CEQ"]
    assert by_key[("A", "one-shot", 2)]["unscored_tasks"] == [
        "alice_s2_asr_cot",
        "alice_s2_ser_cot",
        "alice_s2_gr_cot",
        "alice_s2_mmau_cot",
    ]
    report = (run_dir / "alice_report.md").read_text()
    assert "CEQ and CoT items are pooled" not in report
    assert "| items scored | CEQ | CEQ |" in report and "no item has a score): alice_s1_asr_cot," in report

    # the group aggregates what was scored (the CEQ leaves) and names the CoT leaves it could not score
    groups = json.loads((run_dir / "results.json").read_text())["groups"]
    for group in ("alice", "alice_stage1", "alice_stage2", "alice_stage3"):
        block = groups[group]["1-shot"]
        leaves = block["subtasks"]
        assert block["format_strict"] is not None and 0 <= block["format_strict"] <= 1, group
        assert block["format_strict_unscored"] == [t for t in leaves if t.endswith("_cot")], group
    results = json.loads((run_dir / "results.json").read_text())["results"]
    stage3_ceq = [t for t in groups["alice_stage3"]["1-shot"]["subtasks"] if t.endswith("_ceq")]
    expected = np.mean([results[t]["1-shot"]["format_strict"] for t in stage3_ceq])
    assert groups["alice_stage3"]["1-shot"]["format_strict"] == pytest.approx(expected)


# --- bad responses through the harness ------------------------------------------------------------------------
GARBAGE = bytes(random.Random(11).getrandbits(8) for _ in range(50_000)).decode("latin-1")
BAD = ["", "   \n ", "x" * 1_000_000, GARBAGE, "\x00\x01 \ud800\udfff", "<<angry>>", None]


class BadModel(Model):
    """Answers with empty, whitespace, 1 MB, binary, NUL-byte and lone-surrogate text, a valid answer, or gives
    up."""

    name = "bad"

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for r in requests:
            text = BAD[(r.rid.episode + r.rid.shots) % len(BAD)]
            out.append(Response(text=None, error="backend gave up") if text is None else Response(text=text))
        return out


@pytest.mark.slow
def test_bad_responses_are_scored_or_counted_never_lost(tmp_path, monkeypatch):
    import audioeval.models.registry as models

    monkeypatch.setitem(models.CORE_BACKENDS, "bad", models.Backend(f"{__name__}:BadModel", "test"))
    tasks = "alice_s1_ser_ceq,alice_s1_asr_ceq,alice_s1_mmau_cot"
    run_dir = _run(tmp_path, "--tasks", tasks, "--model", "bad", "--limit", "7", "--num_fewshot", "0,1")
    results = json.loads((run_dir / "results.json").read_text())["results"]
    for task in tasks.split(","):
        for k in ("0-shot", "1-shot"):
            block = results[task][k]
            assert block["n"] == 7 and block["errors"] == 1  # the give-up is counted, not scored
            assert block["parse_failure_rate"] > 0  # empty answers are parse failures
        lines = (run_dir / f"samples_{task}.jsonl").read_text().splitlines()
        assert len(lines) == 14
    ser = results["alice_s1_ser_ceq"]["0-shot"]
    assert 0 <= ser["format_strict"] <= 1 and 0 <= ser["accuracy"] <= 1
    assert results["alice_s1_asr_ceq"]["1-shot"]["wer"] >= 0.5


# --- Hub layout ---------------------------------------------------------------------------------------------------
def _decoded(audio) -> np.ndarray:
    if isinstance(audio, dict):
        return np.asarray(audio["array"], dtype=np.float32)
    return audio.get_all_samples().data.numpy().mean(axis=0)


def test_build_and_load_dataset_round_trip(tmp_path):
    import datasets

    out = tmp_path / "hub"
    args = ["build", "alice", "--output_dir", str(out), "--configs", "gr_ceq,mmau_cot,demo_pool"]
    assert main([*args, "--builder_args", "n_per_constraint=1,n_cot=2"]) == 0
    card = (out / "README.md").read_text()
    assert "config_name: gr_ceq" in card and "config_name: demo_pool" in card

    builder = make_builder("alice", "gr_ceq", {"n_per_constraint": 1, "n_cot": 2})
    rows = datasets.load_dataset(str(out), "gr_ceq", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(rows) == builder.num_episodes() == 7
    for index in (0, 6):
        row, episode = rows[index], builder.episode(index)
        assert row["id"] == episode["id"] and row["label"] == episode["query"]["label"]
        assert row["instruction_id"] == episode["metadata"]["instruction_id"]
        assert json.loads(row["kwargs"]) == episode["metadata"]["kwargs"]
        assert [d["pool_id"] for d in row["demos"]] == [d["pool_id"] for d in episode["demos"]]
        assert [d["answer"] for d in row["demos"]] == [d["answer"] for d in episode["demos"]]
        expected = episode["query"]["clips"][0]["audio"].samples
        np.testing.assert_allclose(_decoded(row["audio"]), expected, atol=1e-4)

    pool = datasets.load_dataset(str(out), "demo_pool", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(pool) == make_builder("alice", "demo_pool", {}).num_episodes()
    first = pool[0]
    assert first["pool_id"].startswith("builtin/asr/ceq/") and first["answer"]
    assert len(_decoded(first["audio"])) > 8000


def test_the_build_declares_every_leaderboard_id_a_run_publishes(tmp_path):
    """eval.yaml lists what `push-results` publishes for an ALICE run: the stages' aggregates per metric and
    k, Table 2's pooled cells, each task's main metric per k (judged ones included)."""
    import yaml

    out = tmp_path / "hub"
    assert main(["build", "alice", "--output_dir", str(out), "--n_episodes", "2"]) == 0
    data = yaml.safe_load((out / "eval.yaml").read_text())
    assert data["name"] == "ALICE episodes (audioeval)" and data["evaluation_framework"] == "audioeval"
    ids = {t["id"] for t in data["tasks"]}
    assert {
        "alice-format_loose-8-shot",
        "alice_stage1_b-format_strict-few-shot",
        "alice_stage2-format_strict_json_format-one-shot",
        "alice_s1_asr_cot-wer-0-shot",
        "alice_s3_gr_ceq-format_strict-1-shot",
    } <= ids
    assert "alice_s2_ser_ceq-format_strict-0-shot" not in ids  # stage 2 starts at k = 1
    assert {"config": "asr_cot", "split": "test"}.items() <= next(
        t for t in data["tasks"] if t["id"] == "alice_s1_asr_cot-wer-0-shot"
    ).items()
    run = _run(tmp_path, "--tasks", "alice", "--model", "chance", "--limit", "1")
    dry = tmp_path / "dry"
    push = ["push-results", str(run), "--repo_id", "o/r", "--model_repo", "o/m"]
    assert main([*push, "--benchmark_repo", "o/alice", "--dry_run", str(dry)]) == 0
    (eval_file,) = (dry / "model/.eval_results").iterdir()
    published = [e["dataset"]["task_id"] for e in yaml.safe_load(eval_file.read_text())]
    assert len(published) > 100 and [t for t in published if t not in ids] == []


def test_build_rejects_unknown_builder_arguments(tmp_path):
    code = main(["build", "alice", "--output_dir", str(tmp_path / "x"), "--builder_args", "n_items=3"])
    assert code == 2


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"max_shots": -1}, "max_shots must not be negative"),
        ({"n_episodes": 0}, "n_episodes must be at least 1"),
    ],
)
def test_invalid_counts_are_config_errors(kwargs, fragment):
    from audioeval.errors import ConfigError

    with pytest.raises(ConfigError, match=fragment):
        make_builder("alice", "ser_ceq", kwargs)


def test_cli_reports_bad_task_args_without_a_traceback(tmp_path, capsys):
    code = main(
        ["--tasks", "alice_s1_ser_ceq", "--model", "chance", "--task_args", "max_shots=-1", "--limit", "1"]
    )
    assert code == 2
    assert "max_shots must not be negative" in capsys.readouterr().err
