"""`audioeval build` and `audioeval corpora download` against careless targets and numbers: a file where the
folder should be, a folder under a file, a folder that cannot be written, a non-empty folder, no episodes or
a negative seed. Each is one line naming the flag and what to do, before any generation or download; nothing
is left behind."""

from __future__ import annotations

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
    assert code == 2 and f"{flag} must be at least {least}, got {value}." in err
    assert not any(tmp_path.iterdir())
