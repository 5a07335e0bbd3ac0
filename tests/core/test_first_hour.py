"""A new user's first hour: names are checked first and fast, the no --model notice only follows a run that
passed its checks, `--model list` names every backend, the flags a newcomer reads about exist with help, a run
with samples ends with the command that opens it (runnable as printed, in a shell where the venv is not
activated), a run that writes nothing says so, and `--verbosity DEBUG` shows tracebacks however it is
spelt."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from audioeval.cli import run_parser
from audioeval.models.registry import backends
from tests.conftest import TOY, run_cli

NOTICE = "no --model given"
TOY_BUILDER = TOY / "toy_tones.py"


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
def test_a_run_with_samples_ends_with_the_command_that_opens_it(toy_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # a shell where the venv is not activated
    code, out, _ = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "1", "--no_progress",
         "--model", "chance", "--output_path", str(tmp_path), "--log_samples"]
    )  # fmt: skip
    assert code == 0
    (run_dir,) = [p for p in tmp_path.glob("*/*") if p.is_dir()]
    last = out.strip().splitlines()[-1]
    assert last.startswith("listen to the samples and browse the results: ") and last.endswith(
        f" view {run_dir}"
    )
    printed = last.split(": ", 1)[1]
    assert not printed.startswith("audioeval ")  # not on this PATH: the interpreter's own script, by its path
    # as printed, in a fresh shell with that PATH (exporting instead of serving, so that it returns)
    fresh = subprocess.run(
        ["bash", "-c", f"{printed} --export {tmp_path / 'site'}"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **_pythonpath()},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    code, out, _ = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "1", "--no_progress",
         "--model", "chance", "--output_path", str(tmp_path / "nolog")]
    )  # fmt: skip
    assert code == 0 and "audioeval view" not in out


def _pythonpath() -> dict[str, str]:
    """The test run's PYTHONPATH (the checkout's sources), so the fresh shell runs the same code."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


def test_a_run_without_output_path_says_that_nothing_is_written(toy_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(
        ["--tasks", "toy_tones", "--include_path", str(toy_dir), "--no_cache", "--limit", "1", "--no_progress",
         "--model", "chance"]
    )  # fmt: skip
    assert code == 0 and "| toy_tones |" in out
    assert "no --output_path given: nothing was written (no results.json, summary, reports or samples)" in err
    assert "Run the same command with --output_path results (and --log_samples for every sample)" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "spelling", [["--verbosity", "DEBUG"], ["--verbosity=DEBUG"], ["--verb", "DEBUG"], ["--verbosity=INFO"]]
)
def test_verbosity_debug_shows_the_traceback_however_it_is_spelt(toy_dir, spelling):
    code, _, err = run_cli(
        ["--tasks", "toy_tonez", "--include_path", str(toy_dir), "--no_cache", "--no_progress",
         "--model", "chance", *spelling]
    )  # fmt: skip
    assert code == 2 and "error:" in err and "toy_tonez" in err
    assert ("Traceback" in err) == ("DEBUG" in spelling or "--verbosity=DEBUG" in spelling)


def test_build_states_its_size_and_time_up_front_and_its_bars_have_totals(tmp_path):
    """The estimate comes from a few rows made and compressed as the build makes them: it is close to what
    is written (the toy's clips all take the same room)."""
    out = tmp_path / "built"
    code, printed, err = run_cli(["build", str(TOY_BUILDER), "--n_episodes", "40", "--output_dir", str(out)])
    assert code == 0, err
    found = re.search(
        r"building toy_tones: 1 config\(s\), 40 rows; estimated ([\d.]+) (kB|MB) and \d+ s", err
    )
    assert found, err
    assert err.index("building toy_tones") < err.index("tones/test:")  # before the first bar
    assert "tones/test: 100%" in err and "40/40" in err  # the bar knows its total
    estimated = float(found.group(1)) * {"kB": 1e3, "MB": 1e6}[found.group(2)]
    written = sum(p.stat().st_size for p in out.rglob("*.parquet"))
    assert 0.7 < estimated / written < 1.3, (estimated, written)
    assert re.search(r"wrote 40 rows in 1 config\(s\) \([\d.]+ (kB|MB)\) to ", printed)
