"""Where a run writes, when that place is shared or cannot be written: two runs into one --output_path each
finish in a folder of their own; a cache or output folder that cannot be written stops the run with one line
naming the folder and what to do, before any request reaches the model and with nothing left behind.

Read-only folders are made the way that works for whoever runs the tests: permission bits for a user; for
root (CI), whom permission bits do not stop, an immutable folder (chattr +i) or else a folder on a read-only
mount such as /sys. Each fixture first checks that a write there really fails."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from audioeval.testing.fake_openai import FakeOpenAIServer
from tests.conftest import TOY, load_results, load_samples, run_cli_subprocess, toy_answer

ROOT = os.geteuid() == 0


def toy_run(server: FakeOpenAIServer, out: Path, cache: Path, *extra: str) -> list[str]:
    return [
        "--tasks", "toy_tones", "--include_path", str(TOY), "--limit", "2", "--model", "openai",
        "--model_args", f"model=m,base_url={server.base_url},max_retries=0,num_concurrent=1",
        "--output_path", str(out), "--cache_dir", str(cache), "--log_samples", "--no_progress",
        "--bootstrap_iters", "10", *extra,
    ]  # fmt: skip


def writes_fail(folder: Path) -> bool:
    try:
        (folder / ".probe").write_text("x")
    except OSError:
        return True
    (folder / ".probe").unlink()
    return False


def _chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@contextlib.contextmanager
def _made_read_only(path: Path, read_only_mode: int, writable_mode: int) -> Iterator[str]:
    """`path` made read-only while inside: chmod for a normal user, chattr +i for root (permission bits do not
    stop root); yields how ("" when neither could be done), and undoes it on the way out."""
    locked = ""
    if not ROOT:
        path.chmod(read_only_mode)
        locked = "chmod"
    elif _chattr("+i", path):
        locked = "chattr"
    try:
        yield locked
    finally:
        if locked == "chmod":
            path.chmod(writable_mode)
        elif locked == "chattr":
            _chattr("-i", path)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """An existing folder nobody running the tests can write into."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    with _made_read_only(folder, 0o555, 0o755) as locked:
        if locked and writes_fail(folder):
            yield folder
        elif Path("/sys").is_dir() and writes_fail(Path("/sys")):
            yield Path("/sys")  # sysfs: root cannot create files there either
        else:
            pytest.skip(
                "no folder here that a write to really fails in (root, no chattr, no read-only mount)"
            )


@pytest.fixture
def read_only_file(tmp_path: Path) -> Iterator[Path]:
    """A response cache file (in a writable folder) that cannot be written."""
    cache = tmp_path / "cache"
    cache.mkdir()
    path = cache / "responses.sqlite"
    from audioeval.run.cache import ResponseCache

    ResponseCache(path).close()
    for debris in cache.glob("responses.sqlite-*"):
        debris.unlink()
    with _made_read_only(path, 0o444, 0o644) as locked:
        try:
            with path.open("r+b"):
                writable = True
        except OSError:
            writable = False
        if not locked or writable:
            pytest.skip("cannot make a file read-only for this user here (root without chattr)")
        yield path


# ---- two runs, one --output_path ---------------------------------------------------------------------------
@pytest.mark.slow
def test_two_runs_into_one_output_path_each_finish_in_a_folder_of_their_own(tmp_path: Path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    with FakeOpenAIServer(reply=toy_answer, delay=0.5) as server:
        args = toy_run(server, out, cache)
        first = subprocess.Popen(
            [sys.executable, "-m", "audioeval", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while not list(out.glob("*/*/INCOMPLETE")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the first run holds its folder and waits on the slow endpoint
        second = run_cli_subprocess(args)
        first_out, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second.stderr
    runs = sorted(p for p in out.glob("*/*") if p.is_dir())
    assert len(runs) == 2
    said = {
        line.split("results: ")[1]
        for line in (first_out + second.stdout).splitlines()
        if line.startswith("results: ")
    }
    assert said == {f"{run}/results.json" for run in runs}  # each run names its own folder
    for run in runs:
        assert not (run / "INCOMPLETE").exists() and not list(run.glob("*.partial.jsonl"))
        assert len(load_samples(run, "toy_tones")) == len(load_samples(runs[0], "toy_tones")) > 0
    assert load_samples(runs[0], "toy_tones") == load_samples(runs[1], "toy_tones")
    assert load_results(runs[0])["results"] == load_results(runs[1])["results"]


def test_runs_started_in_the_same_second_never_share_a_folder(tmp_path: Path, monkeypatch):
    """The folder name is the second the run started: of runs that start in the same one, each claims its own
    (the name is taken by creating it, not by looking first)."""
    import audioeval.results.outputs as outputs

    monkeypatch.setattr(outputs.time, "strftime", lambda fmt: "2026-01-01T00-00-00")
    start = threading.Barrier(8)
    made: list[Path] = []
    failed: list[BaseException] = []

    def claim() -> None:
        start.wait()
        try:
            made.append(outputs.make_run_dir(tmp_path, "model"))
        except BaseException as err:  # noqa: BLE001 - collected and asserted below
            failed.append(err)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    names = sorted(p.name for p in made)
    assert names == sorted(["2026-01-01T00-00-00"] + [f"2026-01-01T00-00-00_{i}" for i in range(2, 9)])


# ---- folders that cannot be written ------------------------------------------------------------------------
def _refused_before_any_request(
    proc: subprocess.CompletedProcess, server: FakeOpenAIServer, out: Path
) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert server.requests == []  # no model work
    assert not out.exists() or not list(out.glob("*/*"))  # no run folder left behind
    return lines[0]


@pytest.mark.slow
def test_a_read_only_cache_dir_is_one_line_before_any_model_work(tmp_path: Path, read_only_dir: Path):
    out = tmp_path / "out"
    with FakeOpenAIServer(reply=toy_answer) as server:
        proc = run_cli_subprocess(toy_run(server, out, read_only_dir))
        line = _refused_before_any_request(proc, server, out)
    assert line.startswith(
        f"audioeval: error: --cache_dir: the response cache folder {read_only_dir} is not writable"
    )
    assert "point --cache_dir at a writable folder, or pass --no_cache" in line


@pytest.mark.slow
def test_a_read_only_cache_dir_with_no_cache_runs(tmp_path: Path, read_only_dir: Path):
    with FakeOpenAIServer(reply=toy_answer) as server:
        proc = run_cli_subprocess(toy_run(server, tmp_path / "out", read_only_dir, "--no_cache"))
    assert proc.returncode == 0, proc.stderr
    assert len(load_samples(next((tmp_path / "out").glob("*/*")), "toy_tones")) > 0


@pytest.mark.slow
def test_a_read_only_audioeval_cache_is_one_line_naming_it(tmp_path: Path, read_only_dir: Path):
    """$AUDIOEVAL_CACHE holds dataset locks and synthesized speech for every run, --no_cache or not: it used to
    end in datasets' PermissionError traceback."""
    out = tmp_path / "out"
    env = {**os.environ, "AUDIOEVAL_CACHE": str(read_only_dir)}
    with FakeOpenAIServer(reply=toy_answer) as server:
        args = toy_run(server, out, tmp_path / "cache", "--no_cache")
        line = _refused_before_any_request(run_cli_subprocess(args, env=env), server, out)
    assert line.startswith(f"audioeval: error: $AUDIOEVAL_CACHE {read_only_dir} is not writable")
    assert line.endswith("set AUDIOEVAL_CACHE to a writable folder.")


@pytest.mark.slow
def test_a_read_only_cache_file_is_one_line_not_a_hang(tmp_path: Path, read_only_file: Path):
    """SQLite opens a file it may not write read-only without a word; the first answer's write then failed
    inside the serving task and the run waited forever."""
    out = tmp_path / "out"
    with FakeOpenAIServer(reply=toy_answer) as server:
        proc = run_cli_subprocess(toy_run(server, out, read_only_file.parent), timeout=120)
        line = _refused_before_any_request(proc, server, out)
    assert line.startswith(f"audioeval: error: --cache_dir: cannot write the response cache {read_only_file}")
    assert "pass --no_cache" in line


@pytest.mark.slow
@pytest.mark.parametrize("where", ["read-only folder", "under a file"])
def test_an_output_path_that_cannot_be_written_is_one_line_before_any_model_work(
    tmp_path: Path, read_only_dir: Path, where: str
):
    if where == "under a file":
        (tmp_path / "a_file").write_text("")
        output_path = tmp_path / "a_file" / "out"
    else:
        output_path = read_only_dir
    with FakeOpenAIServer(reply=toy_answer) as server:
        proc = run_cli_subprocess(toy_run(server, output_path, tmp_path / "cache"))
        line = _refused_before_any_request(proc, server, tmp_path / "nothing")
    assert line.startswith(f"audioeval: error: --output_path {output_path}: cannot write there (")
    assert line.endswith("Choose a writable folder.")


def test_a_cache_that_stops_being_writable_mid_run_is_dropped_with_a_warning(tmp_path: Path, caplog):
    """A full disk or a file made read-only while the run goes on: the run keeps its answers, says once that
    they are no longer cached, and is not stopped (nor retried five times per batch)."""
    import sqlite3

    from audioeval.run.cache import CacheEntry, ResponseCache

    cache = ResponseCache(tmp_path / "responses.sqlite")
    cache.put_many([CacheEntry("k1", "generate", "one")])
    cache._db.close()
    cache._db = sqlite3.connect(
        f"file:{tmp_path / 'responses.sqlite'}?mode=ro", uri=True, isolation_level=None
    )
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="audioeval"):
        cache.put_many([CacheEntry("k2", "generate", "two")])
        cache.put_many([CacheEntry("k3", "generate", "three")])
    assert time.monotonic() - started < 1.0
    assert cache.damage is not None and "could not be written" in cache.damage
    assert len([r for r in caplog.records if "could not be written" in r.getMessage()]) == 1
    assert set(cache.get_many(["k1", "k2", "k3"])) == set()  # dropped: no longer read either
    cache.close()


def test_a_store_that_raises_fails_the_requests_instead_of_leaving_them_waiting():
    """The first answer's write used to raise inside the serving task, and the run waited forever."""
    import asyncio

    from audioeval.models.base import Model
    from audioeval.run.cache import NoCache
    from audioeval.run.serving import Server
    from audioeval.types import Message, Request, RequestId, Response, TextPart

    class Echo(Model):
        name = "echo"

        def generate(self, requests):
            return [Response(text="answer") for _ in requests]

    class BrokenStore(NoCache):
        def put_many(self, entries):
            raise RuntimeError("the store broke")

    async def ask() -> None:
        server = Server(Echo(), BrokenStore(), kind="generate")
        request = Request(
            messages=(Message("user", (TextPart("q"),)),), gen_kwargs={}, rid=RequestId("t", 0, 0)
        )
        try:
            await asyncio.wait_for(server.generate(request), timeout=10)
        finally:
            await server.close()

    with pytest.raises(RuntimeError, match="the store broke"):
        asyncio.run(ask())


@pytest.mark.slow
def test_a_read_only_hugging_face_cache_is_one_line_naming_the_path(tmp_path: Path, read_only_dir: Path):
    """A read-only home (a container, a cluster node): `evaluate` creates its modules cache there while the
    tasks are prepared, and its PermissionError used to end the run in a traceback."""
    hf_home = read_only_dir / "huggingface"
    env = {k: v for k, v in os.environ.items() if k not in ("HF_MODULES_CACHE", "HF_EVALUATE_CACHE")}
    env.update(HF_HOME=str(hf_home), AUDIOEVAL_CACHE=str(tmp_path / "work"))
    with FakeOpenAIServer(reply=toy_answer) as server:
        proc = run_cli_subprocess(toy_run(server, tmp_path / "out", tmp_path / "cache"), env=env)
        line = _refused_before_any_request(proc, server, tmp_path / "out")
    assert line.startswith(f"audioeval: error: cannot write {hf_home}")
    assert "HF_HOME for Hugging Face's caches" in line


def test_a_cache_that_answers_locked_while_opening_is_retried_not_refused(tmp_path: Path, monkeypatch):
    """The ranks of a launch open the same new cache in the same instant, and SQLite may answer "database is
    locked" at once (without waiting on the busy timeout) to one of them: seen as a two-process run refused
    with "cannot write the response cache (database is locked)". A lock is waited out; a read-only file is not."""
    import sqlite3

    from audioeval.errors import UsageError
    from audioeval.run import cache as cache_module

    real_connect = sqlite3.connect
    refusals = {"left": 3, "error": "database is locked"}

    class Refusing:
        def __init__(self, db):
            self.db = db

        def execute(self, sql, *args):
            if sql.startswith("PRAGMA journal_mode") and refusals["left"] > 0:
                refusals["left"] -= 1
                raise sqlite3.OperationalError(refusals["error"])
            return self.db.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.db, name)

    monkeypatch.setattr(cache_module.sqlite3, "connect", lambda *a, **k: Refusing(real_connect(*a, **k)))
    cache_module.ResponseCache(tmp_path / "a" / "responses.sqlite").close()
    assert refusals["left"] == 0  # refused three times, then opened

    refusals.update(left=1, error="attempt to write a readonly database")
    with pytest.raises(UsageError, match="readonly database"):
        cache_module.ResponseCache(tmp_path / "b" / "responses.sqlite")
