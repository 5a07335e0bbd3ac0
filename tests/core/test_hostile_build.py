"""`audioeval build` and `audioeval corpora download` against careless targets and numbers: a file where the
folder should be, a folder under a file, a folder that cannot be written, a non-empty folder, no episodes or
a negative seed. Each is one line naming the flag and what to do, before any generation or download; nothing
is left behind. A build stopped by Ctrl-C or SIGTERM removes its staging folder and says so; what SIGKILL
leaves, the next build into the same place removes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import TOY, run_cli

BUILDER = str(TOY / "toy_tones.py")


def _build(*args: str) -> tuple[int, str]:
    code, _, err = run_cli(["build", BUILDER, "--n_episodes", "2", *args])
    return code, err


def _corpora(target: Path | str) -> tuple[int, str]:
    code, _, err = run_cli(["corpora", "download", "fsdd", "--to", str(target)])
    return code, err


@pytest.mark.parametrize("command", [_build, _corpora])
def test_a_file_where_the_folder_should_be_is_refused(tmp_path, command):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    target = ["--output_dir", str(a_file)] if command is _build else [a_file]
    code, err = command(*target)
    assert code == 2 and f"{a_file} is a file, not a folder" in err
    assert a_file.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]

    under = a_file / "sub"
    code, err = command(*(["--output_dir", str(under)] if command is _build else [under]))
    assert code == 2 and f"{a_file} is a file, so the folder cannot be made there" in err


@pytest.mark.parametrize("command", [_build, _corpora])
def test_a_folder_that_cannot_be_written_is_refused(command):
    target = Path("/proc/sys/audioeval-test/out")  # read-only even for root
    if not Path("/proc/sys").is_dir():
        pytest.skip("needs Linux /proc/sys, a folder nobody can write into")
    code, err = command(*(["--output_dir", str(target)] if command is _build else [target]))
    assert code == 2 and "/proc/sys is not writable; choose a folder you can write to" in err
    assert "Traceback" not in err


def test_build_onto_a_non_empty_folder_needs_overwrite_and_keeps_it_otherwise(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    code, err = _build("--output_dir", str(busy))
    assert code == 2 and "exists and is not empty; choose another folder or pass --overwrite" in err
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    code, err = _build("--output_dir", str(busy), "--overwrite")
    assert code == 0, err
    assert (busy / "README.md").is_file() and not (busy / "notes.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["busy"]  # no staging folder left beside it


@pytest.mark.parametrize(
    "flag, value, least",
    [("--n_episodes", "0", 1), ("--n_episodes", "-4", 1), ("--seed", "-1", 0), ("--max_shots", "-1", 0)],
)
def test_build_numbers_below_their_range_are_refused(tmp_path, flag, value, least):
    code, _, err = run_cli(["build", BUILDER, "--output_dir", str(tmp_path / "out"), flag, value])
    assert code == 2 and f"{flag} must be from {least} to " in err and f", got {value}." in err
    assert not any(tmp_path.iterdir())


def _staging(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.building-*"))


def _start_long_build(out: Path) -> subprocess.Popen:
    """A build that runs for minutes, once its staging folder holds data (the first shard is being written)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "audioeval",
            "build",
            BUILDER,
            "--n_episodes",
            "200000",
            "--output_dir",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C reaches it in any job
    )
    deadline = time.monotonic() + 120
    while not any(p.is_file() for s in _staging(out) for p in s.rglob("*")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the build wrote nothing in 120 s"
        time.sleep(0.1)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_build_stopped_by_a_signal_leaves_nothing_and_says_so(tmp_path, sig):
    out = tmp_path / "out"
    proc = _start_long_build(out)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "audioeval: build interrupted: its staging folder was removed and the output folder is as it was "
        "before; run the same command again to build from the start."
    )
    assert list(tmp_path.iterdir()) == []  # no staging folder, no output folder


@pytest.mark.slow
def test_what_a_killed_build_left_is_removed_by_the_next_build_into_that_place(tmp_path):
    out = tmp_path / "out"
    proc = _start_long_build(out)
    proc.kill()  # SIGKILL: nothing in the process can clean up
    proc.communicate(timeout=60)
    (left,) = _staging(out)
    code, _, err = run_cli(["build", BUILDER, "--n_episodes", "2", "--output_dir", str(out)])
    assert code == 0, err
    assert (
        f"removed {left} (" in err
        and f"left by an earlier command into {out} whose process ({proc.pid})" in err
    )
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and (out / "README.md").is_file()


def test_a_staging_folder_of_a_running_build_is_left_alone_and_named(tmp_path):
    out = tmp_path / "out"
    with subprocess.Popen(["sleep", "60"]) as other:  # another build into the same place, still running
        theirs = tmp_path / f".out.building-{other.pid}"
        theirs.mkdir()
        try:
            code, _, err = run_cli(["build", BUILDER, "--n_episodes", "2", "--output_dir", str(out)])
        finally:
            other.kill()
    assert code == 0, err
    assert f"{theirs} belongs to process {other.pid}, which is still running: left alone." in err
    assert theirs.is_dir() and (out / "README.md").is_file()
