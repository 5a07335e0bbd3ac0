"""Careless and hostile input: nothing fails silently, every bad input is a clear error naming what to fix, no
secret reaches an output, and a run folder says whether the run finished."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.errors import AudioEvalError, ConfigError
from audioeval.results.outputs import INCOMPLETE_MARKER
from audioeval.run.cache import CacheEntry, ResponseCache
from audioeval.testing.fake_openai import FakeOpenAIServer, Fault
from tests.conftest import latest_run, load_results, run_cli

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"


def _copy_toy(tmp_path: Path) -> Path:
    dest = tmp_path / "toy"
    shutil.copytree(TOY, dest)
    return dest


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _run(folder: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(["--tasks", "toy_tones", "--include_path", str(folder), "--no_progress", *extra])


# --- 1. no silent failures -----------------------------------------------------------------------------------
def test_a_run_where_every_request_failed_exits_non_zero_and_says_why(tmp_path):
    args = f"model=x,base_url={_closed_port_url()},max_retries=0"
    code, out, err = _run(TOY, "--model", "openai", "--model_args", args, "--no_cache", "--limit", "2")
    assert code == 3, err
    assert "toy_tones: all 6 requests failed (APIConnectionError after 1 attempt(s)" in err
    assert "got no answer at all: toy_tones" in err and "Traceback" not in err
    # the table still says what happened: compact by default, every k with --full_table
    assert "| toy_tones | — |" in out and "failed requests (not scored): toy_tones: 6" in out
    code, out, err = _run(
        TOY, "--model", "openai", "--model_args", args, "--no_cache", "--limit", "2", "--full_table"
    )
    assert "| toy_tones | 0 | — | — | — | — | 0 | 2 |" in out


def test_partial_failures_are_counted_in_the_table_and_warned_with_the_first_error(tmp_path):
    faults = [Fault("500", times=2, retry_after=None)]
    with FakeOpenAIServer(reply=lambda body: "high", faults=faults) as server:
        args = f"model=x,base_url={server.base_url},max_retries=0,num_concurrent=1"
        code, out, err = _run(
            TOY,
            "--model",
            "openai",
            "--model_args",
            args,
            "--no_cache",
            "--limit",
            "4",
            "--output_path",
            str(tmp_path),
            "--full_table",  # the error column of every k
        )
    assert code == 0, err
    assert "toy_tones: 2/12 requests failed (HTTP 500 after 1 attempt(s)" in err and "Rerun" in err
    results = load_results(latest_run(tmp_path))
    errors = [block.get("errors", 0) for block in results["results"]["toy_tones"].values()]
    assert sum(errors) == 2 and results["warnings"] and not results["unscored_tasks"]
    table_errors = [int(line.split("|")[-2]) for line in out.splitlines() if line.startswith("| toy_tones |")]
    assert sum(table_errors) == 2 * 2  # accuracy and parse_failure_rate rows of the k that lost 2 samples


def test_judged_tasks_without_a_judge_are_warned_at_start(tmp_path):
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones_judged",
            "--include_path",
            str(TOY),
            "--model",
            "chance",
            "--no_cache",
            "--limit",
            "2",
        ]
    )
    assert code == 0
    warning = next(line for line in err.splitlines() if "no --judge given" in line)
    assert "toy_tones_judged" in warning and "agrees" in warning and "--judge openai" in warning


def test_alice_without_a_judge_names_its_chain_of_thought_tasks():
    from audioeval.results.run_health import unjudged_warning

    registry = TaskRegistry.discover()
    names, _ = registry.select("alice")
    tasks = [SimpleNamespace(name=n, config=registry.tasks[n]) for n in names]
    warning = unjudged_warning(tasks)
    cot = [n for n in names if n.endswith("_cot")]
    assert cot and f"{len(cot)} selected task(s)" in warning and cot[0] in warning


# --- 2. every rank heard -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_error_on_rank_1_only_is_printed_by_rank_1_and_named_by_rank_0(tmp_path):
    folder = _copy_toy(tmp_path)
    # preflight renders episode 0; rank 1 of 2 gets the odd episodes, where this template fails
    (folder / "query.jinja").write_text(
        "[Query] {{ audio(query.clips[0]) }} {% if episode.index % 2 == 1 %}{{ only_on_rank_1.x }}{% endif %}Label:"
    )
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2"]
    cmd += ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "audioeval"]
    cmd += ["--tasks", "toy_tones", "--include_path", str(folder), "--model", "chance", "--no_cache"]
    cmd += ["--limit", "4", "--no_progress", "--output_path", str(tmp_path / "out")]
    env = {**os.environ, "ACCELERATE_DISABLE_RICH": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    own = [line for line in lines if line.startswith("audioeval [rank 1]: error:")]
    named = [line for line in lines if line.startswith("audioeval [rank 0]: error: rank 1 failed")]
    assert own and "'only_on_rank_1' is undefined" in own[0] and "query.jinja" in own[0], proc.stderr[-3000:]
    assert named and "'only_on_rank_1' is undefined" in named[0], proc.stderr[-3000:]
    (run_dir,) = (tmp_path / "out").glob("*/*")
    assert "rank 1 failed" in (run_dir / INCOMPLETE_MARKER).read_text()


# --- 3. no CI shown when none was measured -------------------------------------------------------------------
@pytest.mark.slow
def test_without_bootstrap_or_with_one_sample_no_interval_is_shown(tmp_path):
    code, out, _ = _run(
        TOY, "--model", "chance", "--no_cache", "--bootstrap_iters", "0", "--output_path", str(tmp_path),
        "--full_table",
    )  # fmt: skip
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("| toy_tones | 0 | accuracy |"))
    assert (
        row.split("|")[6].strip() == "—" and row.split("|")[5].strip() != "—"
    )  # stderr of a mean still stands
    block = load_results(latest_run(tmp_path))["results"]["toy_tones"]["0-shot"]
    assert block["accuracy_ci95"] is None and block["accuracy_stderr"] > 0
    code, out, _ = _run(
        TOY, "--model", "chance", "--no_cache", "--limit", "1", "--output_path", str(tmp_path / "n1")
    )
    block = load_results(latest_run(tmp_path / "n1"))["results"]["toy_tones"]["0-shot"]
    assert block["accuracy_ci95"] is None and block["accuracy_stderr"] is None


def test_negative_bootstrap_iters_is_rejected():
    code, _, err = _run(TOY, "--model", "chance", "--bootstrap_iters", "-5")
    assert code == 2 and "--bootstrap_iters" in err and "must be 0 (no confidence intervals) or more" in err


# --- 4. imports checked before any request -------------------------------------------------------------------
def test_a_package_a_metric_imports_late_is_checked_before_any_request(tmp_path):
    folder = _copy_toy(tmp_path)
    metric = folder / "toy_exact" / "toy_exact.py"
    metric.write_text(
        metric.read_text() + "\n\ndef _late():\n    import surely_not_an_installed_package  # noqa: F401\n"
    )
    with FakeOpenAIServer(reply=lambda body: "high") as server:
        code, _, err = _run(
            folder, "--model", "openai", "--model_args", f"model=x,base_url={server.base_url}", "--no_cache"
        )
        assert server.requests == []
    assert code == 2 and "surely_not_an_installed_package" in err
    assert "the metrics of task toy_tones" in err and "toy_exact.py" in err


def test_a_package_a_verdict_reader_imports_late_is_checked_before_any_request(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "late_verdict.py").write_text(
        "def read(text):\n    import surely_not_an_installed_verdict_package  # noqa: F401\n    return 1.0\n"
    )
    judged = folder / "toy_tones_judged.yaml"
    judged.write_text(judged.read_text().replace("verdict: yes_no}", "verdict: ./late_verdict.py:read}"))
    with FakeOpenAIServer(reply=lambda body: "high") as server:
        code, _, err = run_cli(
            [
                "--tasks",
                "toy_tones_judged",
                "--include_path",
                str(folder),
                "--model",
                "openai",
                "--model_args",
                f"model=x,base_url={server.base_url}",
                "--judge",
                "openai",
                "--judge_args",
                f"model=j,base_url={server.base_url}",
                "--no_cache",
                "--no_progress",
            ]
        )
        assert server.requests == []
    assert code == 2 and "surely_not_an_installed_verdict_package" in err
    assert (
        "verdict reader of judge role 'agrees' of task toy_tones_judged" in err and "late_verdict.py" in err
    )


# --- 5. resume says what it reused; finished and unfinished run folders --------------------------------------
@pytest.mark.slow
def test_resume_reports_what_it_reused_and_a_finished_run_leaves_no_debris(tmp_path):
    args = ("--model", "chance", "--cache_dir", str(tmp_path / "cache"), "--log_samples")
    code, _, err = _run(TOY, *args, "--output_path", str(tmp_path / "first"))
    assert code == 0 and "from the response cache" not in err
    code, _, err = _run(TOY, *args, "--output_path", str(tmp_path / "second"))
    assert code == 0 and "36 of 36 responses came from the response cache" in err
    run_dir = latest_run(tmp_path / "second")
    assert not list(run_dir.glob("*.partial.jsonl")) and not (run_dir / INCOMPLETE_MARKER).exists()


def test_a_run_that_stops_leaves_its_folder_marked_incomplete(tmp_path):
    folder = _copy_toy(tmp_path)
    (folder / "query.jinja").write_text(
        "[Query] {{ audio(query.clips[0]) }} {% if episode.index == 11 %}{{ late_failure.x }}{% endif %}Label:"
    )
    code, _, err = _run(
        folder, "--model", "chance", "--no_cache", "--log_samples", "--output_path", str(tmp_path / "o")
    )
    assert code == 2 and "late_failure" in err
    (run_dir,) = (tmp_path / "o").glob("*/*")
    marker = (run_dir / INCOMPLETE_MARKER).read_text()
    assert "has not finished" in marker and "late_failure" in marker and "resume" in marker
    assert not (run_dir / "results.json").exists() and list(run_dir.glob("*.partial.jsonl"))


# --- 7. secrets in URLs --------------------------------------------------------------------------------------
def test_credentials_in_base_url_reach_no_output(tmp_path, caplog):
    with FakeOpenAIServer(reply=lambda body: "high") as server:
        url = (
            server.base_url.replace("http://", "http://user:hunter2pw@") + "?api-key=qsecret42&api-version=1"
        )
        code, out, err = _run(
            TOY,
            "--model", "openai", "--model_args", f"model=x,base_url={url},max_retries=0",
            "--no_cache", "--limit", "2", "--log_samples", "--output_path", str(tmp_path),
        )  # fmt: skip
    assert code == 0, err
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    for text in (written, out, err):
        assert "hunter2pw" not in text and "qsecret42" not in text
    identity = load_results(latest_run(tmp_path))["model"]["identity"]["base_url"]
    assert identity.startswith("http://user:***@127.0.0.1") and "api-key=***&api-version=1" in identity


def test_log_messages_and_errors_are_redacted(caplog):
    from audioeval.cli import setup_logging
    from audioeval.redact import redact_args, redact_text

    assert redact_text("x https://tok@h/v1 y") == "x https://***@h/v1 y"
    assert redact_text("http://h/?sig=abc&b=1") == "http://h/?sig=***&b=1"
    assert redact_args({"api_key": "k", "max_tokens": 5, "api_key_env": "E"}) == {
        "api_key": "***",
        "max_tokens": 5,
        "api_key_env": "E",
    }
    setup_logging("INFO")
    handler = logging.getLogger("audioeval").handlers[0]
    record = logging.LogRecord(
        "audioeval", logging.WARNING, "", 0, "endpoint %s down", ("http://u:pw@h/v1",), None
    )
    assert handler.filter(record) and record.getMessage() == "endpoint http://u:***@h/v1 down"


# --- 9. bad input that used to give a traceback --------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "openai"], "--model openai needs --model_args model=..."),
        (["--model", "openai", "--model_args", "model=x,num_concurrent=abc"], "num_concurrent=abc: model 'openai' expects an integer"),
        (["--model", "openai", "--model_args", "model=x,num_concurrent=0"], "num_concurrent=0: model 'openai' must be at least 1"),
        (["--model", "openai", "--model_args", "model=x,timeout=abc"], "timeout=abc: model 'openai' expects a number"),
        (["--model", "hf"], "--model hf needs --model_args pretrained=..."),
        (["--model", "chance", "--limit", "nan"], "--limit must be a positive count"),
        (["--model", "chance", "--limit", "inf"], "--limit must be a positive count"),
        (["--model", "openai", "--model_args", "model=x", "--gen_kwargs", "max_new_tokens=abc"], "max_new_tokens expects an integer"),
        (["--model", "openai", "--model_args", "model=x", "--gen_kwargs", "max_new_token=5"], "Did you mean: max_new_tokens"),
        (["--model", "chance", "--gen_kwargs", "temprature=0"], "Did you mean: temperature"),
        (["--model", "openai", "--model_args", "model=x", "--gen_kwargs", "temperature=hot"], "temperature expects a number"),
        (["--model", "chance", "--judge", "openai", "--judge_args", "model=j,temperature=hot"], "--judge openai (judge 1): --judge_args: model 'openai': temperature expects a number"),
    ],
)  # fmt: skip
def test_bad_values_are_one_line_errors(extra, message):
    code, _, err = _run(TOY, *extra)
    assert code == 2 and message in err and "Traceback" not in err, err


def test_model_arguments_are_checked_before_any_task_is_prepared(monkeypatch):
    import audioeval.run.conductor as run_module
    import audioeval.run.planning as planning  # the run's first stage: what is checked before anything runs

    def no_preparation(*args, **kwargs):
        raise AssertionError("tasks were prepared before the model arguments were checked")

    monkeypatch.setattr(planning.TaskRegistry, "discover", no_preparation)
    monkeypatch.setattr(planning, "prepare_tasks", no_preparation)
    for model, args in (
        ("chance", {"sed": 1}),
        ("openai", {"model": "x", "num_concurrent": "abc"}),
        ("hf", {}),
    ):
        with pytest.raises(AudioEvalError):
            run_module.run_evaluation(run_module.RunConfig(tasks="toy_tones", model=model, model_args=args))
    with pytest.raises(AudioEvalError, match="max_new_tokens"):
        run_module.run_evaluation(
            run_module.RunConfig(tasks="x", model="chance", gen_kwargs={"max_new_tokens": "a"})
        )


def test_extra_body_settings_are_sent_as_given():
    from audioeval.models.openai_chat import completion_payload
    from audioeval.types import Message, Request, RequestId, TextPart

    request = Request(
        (Message("user", (TextPart("hi"),)),),
        {"extra_body.min_tokens": 3, "until": ["\n"]},
        RequestId("t", 0, 0),
    )
    payload = completion_payload(request, {})
    assert payload["extra_body"] == {"min_tokens": 3} and payload["stop"] == ["\n"]


def test_non_utf8_task_file_names_file_and_line(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_bytes(path.read_bytes() + b"\ndescription: caf\xe9\n")
    code, _, err = _run(folder, "--model", "chance")
    lines = path.read_bytes().count(b"\n")
    assert (
        code == 2
        and f"{path}:{lines}: the YAML file is not UTF-8 text" in err
        and "Save the file as UTF-8" in err
    )
    assert "task or group 'toy_tones' is unavailable" in err


def _corrupt(db: Path) -> None:
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page after the schema page
    db.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_cache_damaged_mid_run_is_dropped_with_advice_and_the_run_completes(tmp_path):
    cache = tmp_path / "cache"
    code, first, _ = _run(TOY, "--model", "chance", "--cache_dir", str(cache))
    assert code == 0
    _corrupt(cache / "responses.sqlite")
    code, again, err = _run(
        TOY, "--model", "chance", "--cache_dir", str(cache), "--output_path", str(tmp_path / "o")
    )
    table = [line for line in again.splitlines() if line.startswith("|")]
    before = [line for line in first.splitlines() if line.startswith("|")]
    assert code == 0 and table == before and "Traceback" not in err  # same results as before
    assert (
        f"the response cache {cache / 'responses.sqlite'} is damaged" in err and "Move it aside (mv " in err
    )
    results = load_results(latest_run(tmp_path / "o"))
    assert results["timing"]["samples"] == 36 and any("is damaged" in w for w in results["warnings"])


def test_damaged_cache_calls_never_raise(tmp_path, caplog):
    cache = ResponseCache(tmp_path / "r.sqlite")
    cache.put_many([CacheEntry(f"k{i}", "generate", "x" * 3000) for i in range(20)])
    cache.close()
    _corrupt(tmp_path / "r.sqlite")
    cache = ResponseCache(tmp_path / "r.sqlite")
    assert cache.get_many([f"k{i}" for i in range(20)]) == {} and cache.damage
    cache.put_many([CacheEntry("new", "generate", "y")])  # no exception: the run keeps what it has
    cache.close()


# --- 10. declared builder kwargs ---------------------------------------------------------------------------
def test_builder_kwargs_a_builder_does_not_read_are_errors(tmp_path):
    folder = _copy_toy(tmp_path)
    path = folder / "toy_tones.yaml"
    path.write_text(path.read_text() + "builder_kwargs: {data_dir: /etc}\n")
    code, _, err = _run(folder, "--model", "chance")
    assert (
        code == 2 and "unknown argument of builder './toy_tones.py' 'data_dir'" in err and "n_episodes" in err
    )


# --- 13. include across folders; one broken file ------------------------------------------------------------
def test_including_a_builtin_task_from_another_folder_resolves_its_templates(tmp_path):
    from audioeval.resources import tasks_dir
    from audioeval.run.prepared import prepare_tasks

    builtin = tasks_dir() / "audioicl_bench" / "audioicl_audio_count.yaml"
    (tmp_path / "my_count.yaml").write_text(f"include: {builtin}\ntask: my_count\ngroup: []\n")
    judged = tmp_path / "judged"
    judged.mkdir()
    (judged / "my_judged.yaml").write_text(
        f"include: {TOY / 'toy_tones_judged.yaml'}\ntask: my_judged\ngroup: []\n"
    )
    registry = TaskRegistry.discover([tmp_path, TOY])
    assert (
        registry.tasks["my_count"].templates["prompt"]
        == tasks_dir() / "audioicl_bench" / "audioicl_prompt.jinja"
    )
    (task,) = prepare_tasks(
        registry, ["my_count"], num_fewshot=[1], task_args={}, limit="1", seed=0, gen_kwargs={}
    )
    (request, _), *_ = task.requests_for(task.episode(0))  # the template's {% import %} resolves too
    assert "[Demo 1]" in request.messages[-1].text or request.messages
    from audioeval.config.judge_roles import load_roles

    roles = load_roles(registry.tasks["my_judged"])
    assert {r.template_path for r in roles} == {
        TOY / "judge" / "agrees.jinja",
        TOY / "judge" / "quality.jinja",
    }


@pytest.mark.slow
def test_one_broken_task_file_does_not_break_its_folder(tmp_path, caplog):
    folder = _copy_toy(tmp_path)
    (folder / "zz_broken.yaml").write_text("task: zz\nbuilder: [oops\n")
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        registry = TaskRegistry.discover([folder])
    assert {"toy_tones", "toy_tones_chat"} <= set(registry.tasks)
    assert any("zz_broken.yaml:3: invalid YAML" in r.getMessage() for r in caplog.records)
    with pytest.raises(
        AudioEvalError, match=r"could not be read and may define 'zz': .*zz_broken\.yaml:3: invalid YAML"
    ):
        registry.select("zz")
    code, out, err = _run(folder, "--model", "chance", "--no_cache", "--limit", "1")
    assert code == 0 and "| toy_tones | accuracy |" in out and "zz_broken.yaml" in err


def test_a_name_defined_twice_is_still_an_error(tmp_path):
    folder = _copy_toy(tmp_path)
    shutil.copy(folder / "toy_tones.yaml", folder / "again.yaml")
    with pytest.raises(ConfigError, match="is also defined in"):
        TaskRegistry.discover([folder])


def test_results_json_is_valid_json_with_nulls(tmp_path):
    code, _, _ = _run(TOY, "--model", "chance", "--no_cache", "--limit", "1", "--output_path", str(tmp_path))
    text = (latest_run(tmp_path) / "results.json").read_text()
    assert code == 0 and "NaN" not in text and json.loads(text)["warnings"] == []
