"""`audioeval build` writes the eval.yaml that makes the pushed folder a Hub benchmark: the documented fields
(https://huggingface.co/docs/hub/eval-results, "Eval.yaml specification"), and as `tasks` every `task_id` that
`audioeval push-results` publishes for a real run of the benchmark; a folder no run can read gets none, with a
warning saying why; a push the Hub refuses for its eval.yaml says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import TOY, latest_run, run_cli

BUILDER = str(TOY / "toy_tones.py")
SPEC_FIELDS = ["name", "description", "evaluation_framework", "tasks"]


def build(out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["build", BUILDER, "--output_dir", str(out), "--n_episodes", "3", *extra])


def declared(folder: Path) -> dict:
    return yaml.safe_load((folder / "eval.yaml").read_text())


@pytest.fixture(scope="module")
def toy_build(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build") / "toy"
    code, stdout, err = build(out, "--include_path", str(TOY))
    assert code == 0, err
    assert "eval.yaml: 17 leaderboard task(s)" in stdout
    return out


def test_the_built_folder_declares_its_leaderboards_in_the_documented_fields(toy_build):
    data = declared(toy_build)
    assert list(data) == SPEC_FIELDS
    assert data["name"] == "toy_tones" and data["evaluation_framework"] == "audioeval"
    assert "<group or task>-<metric>-<k>-shot" in data["description"]
    ids = [t["id"] for t in data["tasks"]]
    assert len(ids) == len(set(ids))
    for task in data["tasks"]:
        assert set(task) in ({"id"}, {"id", "config", "split"})
        if "config" in task:  # a task's numbers: the config and split it reads
            assert (task["config"], task["split"]) == ("tones", "test") and not task["id"].startswith("toy-")
    # every group aggregate per metric and k, each task's main metric per k, at the tasks' default k
    assert {"toy-accuracy-3-shot", "toy_bench-grade-1-shot", "toy_tones_chat-accuracy-0-shot"} <= set(ids)
    assert "toy_bench-accuracy-3-shot" not in ids  # toy_bench runs k = 0, 1
    # a judged task's main metric is declared although nothing could score it without a judge
    assert "toy_tones_judged-accuracy-1-shot" in ids


def test_every_id_push_results_publishes_for_a_real_run_is_declared(toy_build, tmp_path):
    out = tmp_path / "runs"
    args = ["--tasks", "toy,toy_bench", "--include_path", str(TOY), "--model", "chance", "--limit", "2"]
    code, _, err = run_cli([*args, "--output_path", str(out), "--no_progress"])
    assert code == 0, err
    dry = tmp_path / "dry"
    code, _, err = run_cli(
        ["push-results", str(latest_run(out)), "--repo_id", "org/r", "--model_repo", "org/m"]
        + ["--benchmark_repo", "org/toy-bench", "--dry_run", str(dry)]
    )
    assert code == 0, err
    (eval_file,) = (dry / "model/.eval_results").iterdir()
    published = [e["dataset"]["task_id"] for e in yaml.safe_load(eval_file.read_text())]
    assert len(published) >= 10 and "toy_bench-accuracy-1-shot" in published
    ids = {t["id"] for t in declared(toy_build)["tasks"]}
    assert [t for t in published if t not in ids] == []


def test_a_folder_no_run_can_read_gets_no_eval_yaml_and_a_warning_why(tmp_path):
    # no task reads a builder file unless --include_path names their folder
    code, stdout, err = build(tmp_path / "a")
    assert code == 0, err
    assert not (tmp_path / "a/eval.yaml").exists() and (tmp_path / "a/README.md").is_file()
    assert "no eval.yaml written" in err and "--include_path" in err and "eval.yaml:" not in stdout
    # the tasks' default k = 3 needs 3 demonstrations; these episodes carry 1
    code, _, err = build(tmp_path / "b", "--include_path", str(TOY), "--max_shots", "1")
    assert code == 0, err
    assert not (tmp_path / "b/eval.yaml").exists()
    assert "no eval.yaml written" in err and "k=3 needs 3 demonstrations" in err
    # a folder that is not there is refused before anything is built
    code, _, err = build(tmp_path / "c", "--include_path", str(tmp_path / "nowhere"))
    assert code == 2 and "--include_path" in err and not (tmp_path / "c").exists()


def test_a_push_the_hub_refuses_for_its_eval_yaml_says_how_to_push_without_it(toy_build, monkeypatch):
    import huggingface_hub

    class RefusingApi:
        def __init__(self, token=None):
            pass

        def create_repo(self, repo_id, **kwargs):
            pass

        def upload_folder(self, **kwargs):
            raise ValueError("Invalid eval.yaml: evaluation_framework is not a supported framework")

    monkeypatch.setattr(huggingface_hub, "HfApi", RefusingApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_value_123")
    code, _, err = run_cli(["push", str(toy_build), "--repo_id", "org/toy"])
    assert code == 2 and "Invalid eval.yaml" in err
    assert f"remove {toy_build / 'eval.yaml'} to push the data without leaderboards" in err
