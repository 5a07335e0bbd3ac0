"""A fourth benchmark from one folder: tests/fixtures/toy brings its builder, templates, metrics, judge template,
and its own parser, verdict reader and report (toy_hooks.py), run through --include_path with a judge on the
fake OpenAI server, and its own baseline backend. Nothing under src/audioeval names it.

The tests follow docs/architecture.md's walkthroughs step by step: "add a benchmark" (steps 1-8) and "add a
backend" (steps 1-4); each block of assertions says which step it checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from audioeval.data.builders import make_builder
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text
from tests.conftest import free_port, latest_run, load_results, load_samples, run_cli

TASK = "toy_bench_tones"
MODEL_REPLIES = ("I hear a HIGH tone.", "low, surely", "no idea")


def reply(body: dict) -> str:
    if body.get("model") == "grader":
        text = prompt_text(body)
        reference = text.split("Reference: ")[1].split("\n")[0].strip()
        response = text.split("Response: ")[1].strip().lower()
        if "no idea" in response:
            return "I cannot grade this."  # no `Grade:`: a judge failure, counted
        return "Grade: PASS" if reference in response else "Grade: FAIL"
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    return MODEL_REPLIES[digest[0] % len(MODEL_REPLIES)]


def test_a_benchmark_from_one_folder_runs_end_to_end_with_its_own_hooks(toy_dir, tmp_path):
    with FakeOpenAIServer(reply=reply, port=free_port()) as server:
        code, out, err = run_cli(
            [
                "--tasks",
                "toy_bench",
                "--include_path",
                str(toy_dir),
                "--model",
                "openai",
                "--model_args",
                f"model=lalm,base_url={server.base_url}",
                "--judge",
                "openai",
                "--judge_args",
                f"model=grader,base_url={server.base_url},id=grader",
                "--output_path",
                str(tmp_path / "out"),
                "--log_samples",
                "--no_cache",
                "--no_progress",
                "--limit",
                "8",
            ]
        )
    assert code == 0, err  # step 8: the folder runs with --include_path, a model and a judge
    run_dir = latest_run(tmp_path / "out")
    results = load_results(run_dir)
    samples = load_samples(run_dir, TASK)
    assert len(samples) == 16 and {s["response"] for s in samples} == set(MODEL_REPLIES)

    # step 1, the builder: every sample is an episode of ./toy_tones.py (a pure function of config, seed, index)
    builder = make_builder(str(toy_dir / "toy_tones.py"), "tones", {"seed": 0, "n_episodes": 12})
    for s in samples:
        episode = builder.episode(s["episode"])
        assert s["episode_id"] == episode["id"] and s["metadata"] == episode["metadata"]

    # step 2, the task: one sample per episode and k of toy_bench.yaml's num_fewshot, its target the query
    # label, and a block for the task's group
    assert sorted((s["episode"], s["shots"]) for s in samples) == [(e, k) for e in range(8) for k in (0, 1)]
    assert all(s["target"] == builder.episode(s["episode"])["query"]["label"] for s in samples)
    assert set(results["groups"]["toy_bench"]) == {"0-shot", "1-shot"}

    # step 3, the templates: the system line, then k demonstration clips and the query's, each placed once
    for s in samples:
        system, user = s["messages"]
        assert system["content"] == [{"type": "text", "text": "Answer low or high."}]
        assert sum(part["type"] == "audio" for part in user["content"]) == s["shots"] + 1

    # step 4, the folder's parser: the last low/high word, lower case; none is a parse failure
    for s in samples:
        expected = {"I hear a HIGH tone.": "high", "low, surely": "low", "no idea": None}[s["response"]]
        assert s["parse_failure"] == (expected is None)
        if expected is not None:
            assert s["prediction"] == expected
            # step 5, the folder's metrics: per-sample accuracy from ./toy_exact
            assert s["scores"]["accuracy"] == float(expected == s["target"])

    # step 6, the judge and the folder's verdict reader: `Grade: PASS|FAIL`; a reply without one is a judge failure, never a score
    for s in samples:
        verdict = s["judgments"]["graded"]["grader"]
        if s["response"] == "no idea":
            assert verdict["value"] is None and verdict["error"] == "unparsable verdict"
            assert s["scores"]["grade"] is None
        else:
            assert verdict["value"] == float(s["target"] in s["response"].lower()) == s["scores"]["grade"]
    failed = sum(s["response"] == "no idea" for s in samples)
    assert results["judges"]["grader"]["failed_verdicts"] == failed > 0

    # step 7, the folder's report: listed in results.json, showing the numbers results.json holds
    report = run_dir / "toy_bench_report.md"
    assert str(report) in results["reports"]
    rows = report.read_text().splitlines()[2:]
    assert len(rows) == 2
    for shot, scores in results["results"][TASK].items():
        cells = [json.dumps(scores[m]) for m in ("accuracy", "grade", "parse_failure_rate")]
        assert f"| {TASK} | {shot} | " + " | ".join(cells) + " |" in rows
    assert 0 < results["results"][TASK]["0-shot"]["parse_failure_rate"] < 1  # step 4: failures are counted


def test_the_core_names_none_of_the_folders_pieces():  # step 8: nothing under src/audioeval names them
    src = Path(__file__).resolve().parents[3] / "src" / "audioeval"
    for path in src.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "toy_hooks" not in text and "toy_bench" not in text, path


def test_the_folder_registers_its_own_baseline_by_name(toy_dir, tmp_path):
    """`toy-pitch` comes from the folder's backends.py: listed by `--model list` with this --include_path only,
    and run by name like any backend; it reads the tone, so it is right on every episode."""
    # backend steps 1-3, the class, its identity and its registration: what backends.py names is a Model
    from audioeval.models.base import Model
    from audioeval.models.registry import get_model_class, use_backend_folders

    use_backend_folders([str(toy_dir)])
    cls = get_model_class("toy-pitch")
    assert issubclass(cls, Model) and cls().identity == {"model": "toy-pitch"}

    # backend step 4, use it: listed with its one line, then run by name
    code, out, _ = run_cli(["--model", "list", "--include_path", str(toy_dir)])
    assert code == 0
    assert any(line.startswith("toy-pitch ") and "pitch" in line for line in out.splitlines())
    code, out, err = run_cli(
        [
            *("--tasks", TASK, "--include_path", str(toy_dir), "--model", "toy-pitch"),
            *(
                "--output_path",
                str(tmp_path / "out"),
                "--no_cache",
                "--no_progress",
                "--bootstrap_iters",
                "0",
            ),
        ]
    )
    assert code == 0, err
    results = load_results(latest_run(tmp_path / "out"))
    assert results["model"]["name"] == "toy-pitch"
    assert {scores["accuracy"] for scores in results["results"][TASK].values()} == {1.0}


def test_a_backend_name_is_unknown_without_its_folder():  # backend step 4: only with its folder
    code, out, err = run_cli(["--tasks", TASK, "--model", "toy-pitch"])
    assert code == 2 and "unknown model 'toy-pitch'" in err and "--model list" in err
