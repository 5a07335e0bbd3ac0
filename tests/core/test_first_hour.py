"""A new user's first hour (issue 24): names are checked first and fast, the no --model notice only follows
a run that passed its checks, `--model list` names every backend, the flags a newcomer reads about exist
with help, and a run with samples ends with the command that opens it."""

from __future__ import annotations

import re

import pytest

from audioeval.cli import run_parser
from audioeval.models.registry import backends
from tests.conftest import run_cli

NOTICE = "no --model given"


def test_a_misspelt_task_is_reported_before_the_run_loads_anything(toy_dir, monkeypatch):
    import sys

    for heavy in ("audioeval.run.conductor", "audioeval.run.evaluator"):
        monkeypatch.delitem(sys.modules, heavy, raising=False)
    code, out, err = run_cli(["--tasks", "toy_tonez", "--include_path", str(toy_dir)])
    assert code == 2 and out == ""
    assert (
        err.splitlines() == [err.splitlines()[0]]
        and "unknown task or group 'toy_tonez'. Did you mean: toy_tones" in err
    )
    assert NOTICE not in err
    assert "audioeval.run.conductor" not in sys.modules  # reported before the run's modules were imported


@pytest.mark.parametrize(
    "args, message",
    [
        (["--limit", "abc"], "--limit must be a count"),
        (["--model", "chanse"], "unknown model 'chanse'. Did you mean: chance"),
        (["--task_args", "nope=1"], "--task_args"),
    ],
)
def test_errors_come_alone_and_the_notice_only_after_the_checks(toy_dir, args, message):
    base = ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--no_progress"]
    code, _, err = run_cli([*base, *args])
    assert code == 2 and message in err
    assert NOTICE not in err


def test_the_notice_follows_a_run_that_passed_its_checks(toy_dir):
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(toy_dir),
            "--no_cache",
            "--limit",
            "1",
            "--no_progress",
        ]
    )
    assert code == 0 and NOTICE in err


def test_model_list_prints_every_backend_on_one_line():
    code, out, _ = run_cli(["--model", "list"])
    assert code == 0
    lines = out.strip().splitlines()
    assert [line.split()[0] for line in lines] == sorted(backends())
    assert all(len(line.split(None, 1)) == 2 for line in lines)  # each with its description


def test_batch_size_no_progress_and_full_table_have_help():
    helps = {a.dest: a.help for a in run_parser()._actions}
    for flag in ("batch_size", "no_progress", "full_table"):
        assert helps[flag] and len(helps[flag]) > 10, flag


def test_the_readme_flag_table_lists_the_newcomers_flags():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for flag in ("--no_progress", "--full_table", "--batch_size", "--model list"):
        assert f"`{flag}" in readme, flag
    quick = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert "--log_samples" in quick and "--model dsp-oracle --limit 50" in quick
    assert re.search(r"audioeval view", readme.split("## Quick start", 1)[1].split("## ", 1)[0])


@pytest.mark.slow
def test_a_run_with_samples_ends_with_the_command_that_opens_it(toy_dir, tmp_path):
    code, out, _ = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "1", "--no_progress",
         "--model", "chance", "--output_path", str(tmp_path), "--log_samples"]
    )  # fmt: skip
    assert code == 0
    (run_dir,) = [p for p in tmp_path.glob("*/*") if p.is_dir()]
    assert out.strip().splitlines()[-1].endswith(f"audioeval view {run_dir}")
    code, out, _ = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "1", "--no_progress",
         "--model", "chance", "--output_path", str(tmp_path / "nolog")]
    )  # fmt: skip
    assert code == 0 and "audioeval view" not in out
