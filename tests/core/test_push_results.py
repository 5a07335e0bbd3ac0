"""`audioeval push-results`: a real logged run published as a dataset repository (dry run: the tree, the card,
the parquet details read back with `datasets`, the Hub's `.eval_results/` entries), the upload path against a
fake HfApi (one commit with every file, one pull request), and the refusals (bad runs, offline, no token,
missing repositories, a leaked secret)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.conftest import TOY, latest_run, run_cli

REPO, MODEL_REPO, BENCH_REPO = "org/toy-results", "org/toy-model", "org/toy-bench"


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """The toy benchmark's group (two tasks), 3 episodes each, samples logged."""
    out = tmp_path_factory.mktemp("runs")
    args = ["--tasks", "toy", "--include_path", str(TOY), "--model", "chance", "--limit", "3"]
    code, _, err = run_cli([*args, "--log_samples", "--output_path", str(out), "--no_progress"])
    assert code == 0, err
    return latest_run(out)


@pytest.fixture
def run_copy(toy_run, tmp_path) -> Path:
    """A copy of the run that a test may damage."""
    return Path(shutil.copytree(toy_run, tmp_path / "model" / toy_run.name))


def dry_run(run_dir: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["push-results", str(run_dir), "--repo_id", REPO, "--dry_run", str(out), *extra])


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def sample_lines(run_dir: Path, task: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"samples_{task}.jsonl").read_text().splitlines()]


def test_dry_run_writes_the_dataset_tree_and_the_card(toy_run, tmp_path):
    out = tmp_path / "dry"
    code, stdout, err = dry_run(toy_run, out)
    assert code == 0, err
    assert "nothing was uploaded" in stdout
    tree = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert tree == [
        "dataset/README.md",
        "dataset/details/toy_tones.parquet",
        "dataset/details/toy_tones_chat.parquet",
        "dataset/results.json",
        "dataset/summary.md",
    ]
    assert (out / "dataset/results.json").read_bytes() == (toy_run / "results.json").read_bytes()
    assert (out / "dataset/summary.md").read_bytes() == (toy_run / "summary.md").read_bytes()
    card = (out / "dataset/README.md").read_text()
    meta = front_matter(card)
    assert meta["configs"] == [
        {"config_name": t, "data_files": [{"split": "test", "path": f"details/{t}.parquet"}]}
        for t in ("toy_tones", "toy_tones_chat")
    ]
    settings = meta["audioeval"]
    results = json.loads((toy_run / "results.json").read_text())
    assert settings["model"]["name"] == "chance" and settings["seed"] == 0 and settings["limit"] == "3"
    assert settings["tasks"]["toy_tones"]["shots"] == [0, 1, 3]
    assert settings["versions"] == results["versions"] and settings["date"] == results["date"]
    command = settings["command"]
    assert command.startswith("audioeval --tasks toy --model chance --limit 3 --seed 0")
    assert (
        "--log_samples" in command and str(TOY) not in command and "--include_path '<task folder" in command
    )
    body = card.split("---\n", 2)[2]
    assert "| group: toy | accuracy |" in body and command in body  # the results table, the command


def test_details_load_with_datasets_one_row_per_sample_as_logged(toy_run, tmp_path):
    import datasets

    out = tmp_path / "dry"
    assert dry_run(toy_run, out)[0] == 0
    for task in ("toy_tones", "toy_tones_chat"):
        logged = sample_lines(toy_run, task)
        ds = datasets.load_dataset(
            "parquet", data_files={"test": str(out / f"dataset/details/{task}.parquet")}, split="test"
        )
        assert ds.num_rows == len(logged) == 3 * 3  # 3 episodes x k = 0, 1, 3
        assert ds.features["episode"].dtype == "int64" and ds.features["parse_failure"].dtype == "bool"
        json_columns = [c for c in ds.column_names if isinstance(logged[0][c], dict | list)]
        assert {"metadata", "messages", "scores", "gen_kwargs"} <= set(json_columns)
        back = [{c: json.loads(v) if c in json_columns else v for c, v in row.items()} for row in ds]
        assert back == logged
    # the folder loads by config name, as the Hub repository will
    ds = datasets.load_dataset(str(out / "dataset"), "toy_tones_chat", split="test")
    assert [(r["episode"], r["shots"]) for r in ds] == [(e, k) for e in range(3) for k in (0, 1, 3)]


def test_eval_results_carry_the_hubs_documented_fields(toy_run, tmp_path):
    from huggingface_hub import parse_eval_result_entries

    out = tmp_path / "dry"
    code, stdout, err = dry_run(toy_run, out, "--model_repo", MODEL_REPO, "--benchmark_repo", BENCH_REPO)
    assert code == 0, err
    files = sorted((out / "model/.eval_results").iterdir())
    assert [f.name for f in files] == [f"audioeval_toy_tones_{toy_run.name}.yaml"]
    assert f"pull request on {MODEL_REPO}" in stdout
    entries = yaml.safe_load(files[0].read_text())
    results = json.loads((toy_run / "results.json").read_text())
    by_id = {e["dataset"]["task_id"]: e for e in entries}
    shots = ("0-shot", "1-shot", "3-shot")
    names = ("toy", "toy_tones", "toy_tones_chat")
    assert set(by_id) == {f"{n}-accuracy-{k}" for n in names for k in shots}
    for entry in entries:
        assert set(entry) == {"dataset", "value", "date", "source", "notes"}
        assert entry["dataset"] == {"id": BENCH_REPO, "task_id": entry["dataset"]["task_id"]}
        assert entry["source"] == {
            "url": f"https://huggingface.co/datasets/{REPO}",
            "name": "audioeval run details",
        }
        assert entry["date"].startswith(results["date"][:19]) and entry["date"].endswith("+00:00")
    # every value exactly as results.json has it (no rounding)
    assert by_id["toy-accuracy-1-shot"]["value"] == results["groups"]["toy"]["1-shot"]["accuracy"]
    for name, k in ((n, k) for n in names for k in shots):
        section = results["groups"] if name == "toy" else results["results"]
        assert by_id[f"{name}-accuracy-{k}"]["value"] == section[name][k]["accuracy"]
    # thirds of 3 episodes: values with more than 6 digits, which a rounded entry would not equal
    assert any(e["value"] != round(e["value"], 6) for e in entries)
    assert "accuracy of group toy at 1-shot" in by_id["toy-accuracy-1-shot"]["notes"]
    parsed = parse_eval_result_entries(entries)  # huggingface_hub reads them back
    assert {(p.dataset_id, p.task_id) for p in parsed} == {(BENCH_REPO, t) for t in by_id}


def test_the_benchmark_dataset_comes_from_the_run_or_is_asked_for(run_copy, tmp_path):
    code, _, err = dry_run(run_copy, tmp_path / "a", "--model_repo", MODEL_REPO)
    assert code == 2 and "--benchmark_repo toy_tones=ORG/NAME" in err and "audioeval push" in err
    assert not (tmp_path / "a").exists()
    code, _, err = dry_run(
        run_copy, tmp_path / "b", "--model_repo", MODEL_REPO, "--benchmark_repo", "toys=o/n"
    )
    assert code == 2 and "toys" in err and "toy_tones" in err
    code, _, err = dry_run(run_copy, tmp_path / "c", "--benchmark_repo", BENCH_REPO)
    assert code == 2 and "add --model_repo" in err
    # a run that read its episodes from a Hub dataset (--task_args dataset=) names it, at the commit it read
    results = json.loads((run_copy / "results.json").read_text())
    for config in results["configs"].values():
        config["dataset"] = {
            "source": "org/stored-toy",
            "kind": "hub",
            "repo_id": "org/stored-toy",
            "revision": "ab12",
        }
    (run_copy / "results.json").write_text(json.dumps(results))
    code, _, err = dry_run(run_copy, tmp_path / "d", "--model_repo", MODEL_REPO)
    assert code == 0, err
    entries = yaml.safe_load(next((tmp_path / "d/model/.eval_results").iterdir()).read_text())
    card = front_matter((tmp_path / "d/dataset/README.md").read_text())
    assert card["audioeval"]["tasks"]["toy_tones"]["dataset"] == "org/stored-toy@ab12"
    assert {json.dumps(e["dataset"]["id"]) + e["dataset"]["revision"] for e in entries} == {
        '"org/stored-toy"ab12'
    }


def test_a_run_without_samples_publishes_its_results_and_says_details_need_log_samples(toy_run, tmp_path):
    run = Path(shutil.copytree(toy_run, tmp_path / "run"))
    for samples in run.glob("samples_*.jsonl"):
        samples.unlink()
    code, _, err = dry_run(run, tmp_path / "dry")
    assert code == 0, err
    assert "--log_samples" in err
    tree = sorted(p.relative_to(tmp_path / "dry").as_posix() for p in (tmp_path / "dry").rglob("*"))
    assert tree == ["dataset", "dataset/README.md", "dataset/results.json", "dataset/summary.md"]
    card = (tmp_path / "dry/dataset/README.md").read_text()
    assert "configs" not in front_matter(card) and "run the evaluation with --log_samples" in card
    assert "--log_samples" not in front_matter(card)["audioeval"]["command"]


def test_bad_runs_are_refused_in_one_line(toy_run, run_copy, tmp_path):
    out = tmp_path / "dry"
    code, _, err = dry_run(tmp_path / "nowhere", out)
    assert code == 2 and "nowhere: no such folder" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = dry_run(empty, out)
    assert code == 2 and "not a run folder (no results.json)" in err
    code, _, err = dry_run(run_copy.parent, out)  # OUTPUT_PATH/<model>: it holds the run
    assert code == 2 and "holds runs" in err and run_copy.name in err
    # damaged results.json: the line
    (run_copy / "results.json").write_text('{"results": {}, "groups": {\n  "x": [1,\n')
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and "results.json:3: not valid JSON" in err and "Traceback" not in err
    (run_copy / "results.json").write_text(json.dumps({"results": {}, "groups": {}}))
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and "field `configs` is missing" in err
    # an unfinished run: no results.json, its INCOMPLETE marker
    (run_copy / "results.json").unlink()
    (run_copy / "INCOMPLETE").write_text("running\n")
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and "has not finished" in err and "run the same command again" in err
    assert not out.exists()
    assert len(err.strip().splitlines()) == 1


def test_a_field_of_the_wrong_type_is_one_line_naming_file_line_and_field(run_copy, tmp_path):
    results = run_copy / "results.json"
    record = json.loads(results.read_text())
    record["groups"]["toy"]["1-shot"]["n"] = "9"  # a count written as a string
    results.write_text(json.dumps(record, indent=2))
    text = results.read_text().splitlines()
    groups = next(i for i, t in enumerate(text) if t.startswith('  "groups"'))
    line = next(i for i, t in enumerate(text) if i > groups and t.strip().startswith('"1-shot"')) + 1
    out = tmp_path / "dry"
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and f"{results}:{line}: `groups.toy.1-shot`: `n` is '9', not a count" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and not out.exists()
    (run_copy / "results.json").write_text(json.dumps({**record, "groups": {}, "seed": "zero"}))
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and f"{results}:1: `seed` is a string, not a whole number" in err
    # a sample line of the wrong shape is named the same way
    record["groups"]["toy"]["1-shot"]["n"] = 9
    results.write_text(json.dumps(record, indent=2))
    samples = run_copy / "samples_toy_tones.jsonl"
    lines = samples.read_text().splitlines()
    sample = json.loads(lines[4])
    sample["episode"] = "one"
    lines[4] = json.dumps(sample)
    samples.write_text("\n".join(lines) + "\n")
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and f"{samples}:5: `episode` is a string, not a whole number" in err
    assert "--log_samples" in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_damaged_sample_line_is_named_by_file_and_line_and_nothing_is_written(run_copy, tmp_path):
    samples = run_copy / "samples_toy_tones_chat.jsonl"
    lines = samples.read_text().splitlines()
    lines[3] = lines[3][:40]
    samples.write_text("\n".join(lines) + "\n")
    out = tmp_path / "dry"
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and f"{samples}:4: not a JSON line" in err and "--log_samples" in err
    assert not out.exists() and not list(tmp_path.glob(".dry.*"))  # no staging folder left behind
    lines[3] = "[1, 2]"
    samples.write_text("\n".join(lines) + "\n")
    code, _, err = dry_run(run_copy, out)
    assert code == 2 and f"{samples}:4: expected one sample as a JSON object, found list" in err


def test_flag_errors_are_one_line(toy_run, tmp_path):
    code, _, err = run_cli(
        ["push-results", str(toy_run), "--repo_id", "no-slash", "--dry_run", str(tmp_path / "d")]
    )
    assert code == 2 and "--repo_id 'no-slash': expected org/name" in err
    code, _, err = run_cli(["push-results", str(toy_run), "--repo_id", REPO, "--model_repo", "x"])
    assert code == 2 and "--model_repo 'x'" in err
    code, _, err = run_cli(["push-results"])
    assert code == 2 and "required: run_dir, --repo_id" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["push-results", str(toy_run), "--repo_id", REPO, "--colour", "red"])
    assert code == 2 and "--colour" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    code, _, err = dry_run(toy_run, tmp_path / "full")
    assert code == 2 and "not empty" in err and "--overwrite" in err
    code, _, err = dry_run(toy_run, tmp_path / "full", "--overwrite")
    assert code == 0, err
    assert not (tmp_path / "full" / "x").exists() and (tmp_path / "full/dataset/README.md").is_file()
    code, _, err = run_cli(["push-results", str(toy_run), "--repo_id", REPO, "--overwrite"])
    assert code == 2 and "--overwrite replaces a --dry_run folder" in err


def test_a_secret_in_a_run_file_stops_the_push_and_is_not_repeated(run_copy, tmp_path, monkeypatch):
    secret = "sk-leaked-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    samples = run_copy / "samples_toy_tones.jsonl"
    samples.write_text(samples.read_text().replace('"response": "', f'"response": "{secret} ', 1))
    code, stdout, err = dry_run(run_copy, tmp_path / "dry")
    assert code == 2 and "holds the value of $OPENAI_API_KEY" in err and "samples_toy_tones.jsonl" in err
    assert secret not in stdout + err and not (tmp_path / "dry").exists()


# ---- the upload path, against a fake HfApi ------------------------------------------------------------------


class FakeHub:
    """What push-results asks of huggingface_hub.HfApi, recorded; the files read while they exist."""

    def __init__(
        self, existing: set[tuple[str, str]], present: list[str] | None = None, fail: dict | None = None
    ):
        self.existing, self.present, self.fail = existing, present or [], fail or {}
        self.calls: list[tuple] = []
        hub = self

        class Api:
            def __init__(self, token=None):
                pass

            def whoami(self):
                hub._maybe_fail("whoami")
                return {"name": "someone"}

            def repo_exists(self, repo_id, repo_type=None):
                hub.calls.append(("repo_exists", repo_id, repo_type))
                return (repo_id, repo_type or "model") in hub.existing

            def list_repo_files(self, repo_id, repo_type=None):
                return list(hub.present)

            def create_repo(self, repo_id, **kwargs):
                hub.calls.append(("create_repo", repo_id, kwargs))

            def create_commit(self, repo_id, operations, **kwargs):
                hub._maybe_fail("create_pr" if kwargs.get("create_pr") else "create_commit")
                ops = {
                    op.path_in_repo: Path(op.path_or_fileobj).read_bytes()
                    if hasattr(op, "path_or_fileobj")
                    else None
                    for op in operations
                }
                hub.calls.append(("create_commit", repo_id, ops, kwargs))
                pr = "https://huggingface.co/org/toy-model/discussions/7" if kwargs.get("create_pr") else None
                return SimpleNamespace(oid="c0ffee", pr_url=pr)

        self.Api = Api

    def _maybe_fail(self, what: str) -> None:
        if what in self.fail:
            raise self.fail[what]

    def commits(self) -> list[tuple]:
        return [c for c in self.calls if c[0] == "create_commit"]

    def writes(self) -> list[tuple]:
        return [c for c in self.calls if c[0] in ("create_commit", "create_repo")]


@pytest.fixture
def online(monkeypatch):
    """The Hub reachable as far as push-results can tell: not offline, a token in the environment."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_value_123")


def use(monkeypatch, fake: FakeHub) -> None:
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", fake.Api)


def push(run_dir: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["push-results", str(run_dir), "--repo_id", REPO, *extra])


def test_upload_is_one_commit_of_the_dry_run_tree_and_one_pull_request(
    toy_run, tmp_path, monkeypatch, online
):
    fake = FakeHub({(MODEL_REPO, "model"), (BENCH_REPO, "dataset")})
    use(monkeypatch, fake)
    code, stdout, err = push(toy_run, "--model_repo", MODEL_REPO, "--benchmark_repo", BENCH_REPO, "--private")
    assert code == 0, err
    assert ("create_repo", REPO, {"repo_type": "dataset", "private": True, "exist_ok": True}) in fake.calls
    dataset_commit, pr = fake.commits()
    assert dataset_commit[1] == REPO and dataset_commit[3]["repo_type"] == "dataset"
    assert not dataset_commit[3].get("create_pr")
    dry = tmp_path / "dry"
    assert dry_run(toy_run, dry, "--model_repo", MODEL_REPO, "--benchmark_repo", BENCH_REPO)[0] == 0
    expected = {
        p.relative_to(dry / "dataset").as_posix(): p.read_bytes()
        for p in (dry / "dataset").rglob("*")
        if p.is_file()
    }
    assert dataset_commit[2] == expected  # exactly what --dry_run writes
    assert pr[1] == MODEL_REPO and pr[3]["create_pr"] is True and pr[3]["repo_type"] == "model"
    eval_file = next((dry / "model/.eval_results").iterdir())
    assert pr[2] == {f".eval_results/{eval_file.name}": eval_file.read_bytes()}
    assert f"https://huggingface.co/datasets/{REPO}" in stdout and "discussions/7" in stdout
    uploaded = b"".join(b for c in fake.commits() for b in c[2].values() if b)
    assert b"hf_test_token_value_123" not in uploaded and "hf_test_token_value_123" not in stdout + err


def test_a_second_push_replaces_its_own_stale_files_in_the_same_commit(toy_run, monkeypatch, online):
    present = ["README.md", "notes.md", "details/old_task.parquet", "details/toy_tones.parquet"]
    fake = FakeHub({(REPO, "dataset")}, present)
    use(monkeypatch, fake)
    code, _, err = push(toy_run)
    assert code == 0, err
    assert not [c for c in fake.calls if c[0] == "create_repo"]
    (commit,) = fake.commits()
    assert commit[2]["details/old_task.parquet"] is None  # a delete operation
    assert "notes.md" not in commit[2] and commit[2]["details/toy_tones.parquet"]


def test_offline_no_token_and_missing_repositories_stop_before_anything_is_written(toy_run, monkeypatch):
    from huggingface_hub import constants

    fake = FakeHub({(BENCH_REPO, "dataset")})
    use(monkeypatch, fake)
    staged = []  # the checks come before any file is converted or staged
    monkeypatch.setattr("audioeval.results.publish.cli.stage", lambda *a, **k: staged.append(a))
    code, _, err = push(toy_run)  # the tests run with HF_HUB_OFFLINE=1
    assert (
        code == 2 and "HF_HUB_OFFLINE is set" in err and "--dry_run" in err and "nothing was uploaded" in err
    )
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(Path(toy_run) / "no-token-here"))
    code, _, err = push(toy_run)
    assert code == 2 and "no Hugging Face token" in err and "hf auth login" in err
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_value_123")
    code, _, err = push(toy_run, "--model_repo", MODEL_REPO, "--benchmark_repo", BENCH_REPO)
    assert code == 2 and f"--model_repo {MODEL_REPO}: no such model repository" in err
    fake.existing.add((MODEL_REPO, "model"))
    code, _, err = push(toy_run, "--model_repo", MODEL_REPO, "--benchmark_repo", "org/not-pushed")
    assert code == 2 and "--benchmark_repo org/not-pushed: no such dataset repository" in err
    assert fake.writes() == [] and staged == []
    for err_lines in (err,):
        assert len(err_lines.strip().splitlines()) == 1


def test_an_unreachable_hub_or_a_refused_commit_is_one_line(toy_run, monkeypatch, online):
    fake = FakeHub(set(), fail={"whoami": ConnectionError("[Errno 111] Connection refused")})
    use(monkeypatch, fake)
    code, _, err = push(toy_run)
    assert code == 2 and "cannot reach the Hugging Face Hub" in err and "nothing was uploaded" in err
    assert fake.writes() == []
    from huggingface_hub.errors import HfHubHTTPError

    refused = HfHubHTTPError(
        "403 Forbidden: you cannot write to org/toy-model",
        response=SimpleNamespace(status_code=403, headers={}, request=None),
    )
    fake = FakeHub({(MODEL_REPO, "model"), (BENCH_REPO, "dataset")}, fail={"create_pr": refused})
    use(monkeypatch, fake)
    code, _, err = push(toy_run, "--model_repo", MODEL_REPO, "--benchmark_repo", BENCH_REPO)
    assert code == 2 and "opening the pull request on org/toy-model" in err and "403" in err
    assert f"the results are at https://huggingface.co/datasets/{REPO}" in err and len(fake.commits()) == 1


def test_a_benchmark_run_publishes_its_reports(tmp_path):
    out = tmp_path / "runs"
    args = ["--tasks", "audioicl_audio_count", "--model", "chance", "--limit", "3", "--num_fewshot", "0,1"]
    code, _, err = run_cli([*args, "--log_samples", "--output_path", str(out), "--no_progress"])
    assert code == 0, err
    run = latest_run(out)
    code, _, err = dry_run(run, tmp_path / "dry")
    assert code == 0, err
    reports = sorted(p.name for p in (tmp_path / "dry/dataset/reports").iterdir())
    assert reports == ["audioicl_report.md", "audioicl_shot_scaling.png"]
    assert (tmp_path / "dry/dataset/reports/audioicl_report.md").read_bytes() == (
        run / "audioicl_report.md"
    ).read_bytes()
    card = (tmp_path / "dry/dataset/README.md").read_text()
    assert "`reports/`" in card
    assert "--tasks audioicl_audio_count --model chance --num_fewshot 0,1 --limit 3" in card
    code, _, err = dry_run(run, tmp_path / "again", "--model_repo", MODEL_REPO)
    assert code == 2 and "--benchmark_repo audioicl_bench=ORG/NAME" in err


def test_the_command_keeps_hub_ids_and_hides_local_paths_and_secrets(toy_run):
    from audioeval.results.publish.card import model_label
    from audioeval.results.publish.reproduce import reproduce_command
    from audioeval.results.record import ModelRecord
    from audioeval.results.run_files import read_results

    record = read_results(toy_run / "results.json")
    record.model = ModelRecord(
        "openai",
        {
            "model": "gpt-4o-audio-preview",
            "base_url": "https://user:pa55word@example.com/v1",
            "client_secret": "s3cr3t-value",
        },
        identity={},
        batch_size=1,
    )
    record.task_args = {"data_dir": "/home/me/corpus", "dataset": "org/toy-bench"}
    command = reproduce_command(record, logged_samples=False)
    assert "model=gpt-4o-audio-preview" in command and "base_url=https://user:***@example.com/v1" in command
    assert "client_secret=***" in command and "s3cr3t" not in command and "pa55word" not in command
    assert (
        "data_dir=<data_dir>" in command and "dataset=org/toy-bench" in command and "/home/me" not in command
    )
    assert "--log_samples" not in command
    record.model = ModelRecord("hf", {"pretrained": "/models/Qwen2.5-Omni-7B"}, identity={}, batch_size=1)
    assert model_label(record) == "hf (Qwen2.5-Omni-7B)"
    record.model = ModelRecord(
        "hf", {"pretrained": "Qwen/Qwen2-Audio-7B-Instruct"}, identity={}, batch_size=1
    )
    assert model_label(record) == "hf (Qwen/Qwen2-Audio-7B-Instruct)"
