"""Flags wrong whatever the tasks end in one line naming the flag and its allowed values, exit 2, before the
run's modules are even imported (they used to end in numpy's and zip()'s tracebacks)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import TOY, run_cli

RUN = ["--tasks", "toy_tones", "--include_path", str(TOY), "--no_cache", "--no_progress", "--limit", "1"]


@pytest.mark.parametrize("seed", ["-1", "4294967296", str(2**70)])
def test_a_seed_out_of_range_states_the_range(seed):
    code, _, err = run_cli([*RUN, "--seed", seed])
    assert code == 2
    assert (
        err.strip()
        == f"audioeval: error: --seed must be an integer from 0 to 4294967295 (2**32-1), got {seed}."
    )


def test_the_largest_seed_runs(tmp_path):
    code, out, err = run_cli([*RUN, "--seed", "4294967295", "--output_path", str(tmp_path)])
    assert code == 0, err
    assert "toy_tones" in out


def test_judge_args_without_judge():
    code, _, err = run_cli([*RUN, "--judge_args", "model=x"])
    assert code == 2
    assert "--judge_args given without --judge" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("judges", "judge_args"),
    [(["a"], ["x=1", "y=2"]), (["a,b,c"], ["x=1", "y=2"]), (["a", "b"], ["x=1", "y=2", "z=3"])],
)
def test_judge_args_counts_that_match_no_judge_list(judges, judge_args):
    flags = [f for j in judges for f in ("--judge", j)] + [f for a in judge_args for f in ("--judge_args", a)]
    code, _, err = run_cli([*RUN, *flags])
    assert code == 2
    assert f"--judge_args given {len(judge_args)} times for" in err
    assert "give one per --judge" in err


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--seed", "-1"], ["--judge_args", "model=x"]])
def test_checked_before_the_run_modules_load(flags):
    code = (
        "import sys\nfrom audioeval.cli import main\n"
        f"rc = main({[*RUN, *flags]!r})\n"
        "print(rc, 'audioeval.run.conductor' in sys.modules, 'numpy' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([*RUN, "--spoken_text", "bogus"], "argument --spoken_text: invalid choice: 'bogus'"),
        ([*RUN, "--num_fewshot", "-1"], "--num_fewshot: expected non-negative integers"),
        ([*RUN, "--bogus"], "unrecognized arguments: --bogus (`audioeval --help` lists the flags)."),
        ([*RUN, "--limit"], "argument --limit/-L: expected one argument"),
        (
            ["view", "--port", "abc", "x"],
            "argument --port: invalid int value: 'abc' (`audioeval view --help`",
        ),
        (["build", "adu_bench", "--n_episodes", "x"], "argument --n_episodes: invalid int value: 'x'"),
        (["push"], "the following arguments are required: folder, --repo_id"),
        (["corpora", "bogus"], "argument command: invalid choice: 'bogus'"),
    ],
)
def test_flags_argparse_refuses_are_one_line_too(argv, expected):
    code, out, err = run_cli(argv)
    assert code == 2
    assert err.strip().startswith("audioeval: error: ") and expected in err
    assert len(err.strip().splitlines()) == 1, err  # no usage block before it


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--spoken_text", "transcript"],
            "--spoken_text transcript: model 'chance' does not answer in speech",
        ),
        (["--asr_args", "model=x"], "--asr_args given without --asr"),
        (["--augment_target", "demos"], "--augment_target given without --augment"),
    ],
)
def test_flags_that_need_another_flag_say_so(flags, expected):
    code, _, err = run_cli([*RUN, "--model", "chance", *flags])
    assert code == 2
    assert expected in err and len(err.strip().splitlines()) == 1, err


TTS = ["--model", "tts", "--model_args"]
LOOPBACK = "base_url=http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([*TTS, "text_model=chance,speaking_rate=0"], "--model_args speaking_rate=0: model 'tts' must be from 80 to 450, got 0."),
        ([*TTS, "text_model=chance,speaking_rate=-5"], "--model_args speaking_rate=-5: model 'tts' must be from 80 to 450, got -5."),
        ([*TTS, "text_model=chance,speaking_rate=1e9"], "--model_args speaking_rate=1000000000.0: model 'tts' expects an integer (from 80 to 450), got 1000000000.0."),
        (["--model", "openai", "--model_args", f"model=m,{LOOPBACK},audio_output=true,voice="], "--model_args voice=: model 'openai' must be non-empty, got ''."),
        (["--model", "openai", "--model_args", f"model=,{LOOPBACK}"], "--model_args model=: model 'openai' must be non-empty, got ''."),
        (["--model", "realtime", "--model_args", f"model=,{LOOPBACK}"], "--model_args model=: model 'realtime' must be non-empty, got ''."),
        ([*TTS, "text_model=chance", "--asr", "pocketsphinx", "--asr_args", "hmm=/etc"], "--asr pocketsphinx: --asr_args hmm=/etc: /etc is not a PocketSphinx acoustic model folder (it has no mdef, means, variances, transition_matrices)"),
        ([*TTS, "text_model=chance", "--asr", "pocketsphinx", "--asr_args", "lm=/nonexistent/en.lm.bin"], "--asr pocketsphinx: --asr_args lm=/nonexistent/en.lm.bin: no such file: /nonexistent/en.lm.bin."),
        ([*TTS, "text_model=chance", "--asr", "pocketsphinx", "--asr_args", "workers=0"], "--asr pocketsphinx: --asr_args workers=0: model 'pocketsphinx' must be at least 1, got 0."),
    ],
)  # fmt: skip
def test_declared_argument_out_of_its_range_is_one_line_before_the_run(flags, expected):
    code, out, err = run_cli([*RUN, *flags])
    assert code == 2, err
    assert err.strip().startswith("audioeval: error: " + expected), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and out == ""


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--n_episodes", "1000000000000", "--n_episodes must be from 1 to 1,000,000, got 1000000000000."),
        ("--max_shots", "100000", "--max_shots must be from 0 to 1000, got 100000."),
        ("--seed", "4294967296", "--seed must be from 0 to 4,294,967,295, got 4294967296."),
        ("--builder_args", "n_episodes=1e12", "--builder_args n_episodes: expects an integer (from 1 to 1,000,000), got 1000000000000.0."),
    ],
)  # fmt: skip
def test_build_numbers_are_bounded_before_anything_is_generated(tmp_path, flag, value, expected):
    out_dir = tmp_path / "out"
    code, _, err = run_cli(["build", str(TOY / "toy_tones.py"), "--output_dir", str(out_dir), flag, value])
    assert (code, err.strip()) == (2, f"audioeval: error: {expected}")
    assert not any(tmp_path.iterdir())  # no staging folder, nothing written
