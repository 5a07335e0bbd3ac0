"""One pipeline serves the whole run: a task boundary does not drain the endpoint, one Realtime session pool
serves every task, and results do not depend on how many worker processes synthesize the episodes."""

from __future__ import annotations

import gc
import threading

import pytest

from audioeval.errors import DataError
from audioeval.run.conductor import RunConfig, conduct
from audioeval.run.distributed import Topology
from audioeval.run.prepared import PreparedTask
from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.testing.fake_realtime import FakeRealtimeServer
from tests.conftest import latest_run, load_results, load_samples, run_cli, toy_answer

TASKS = ["toy_tones", "toy_tones_chat"]


class Arrivals(list):
    """The server's list of request bodies, which also notes each arrival in a shared event list."""

    def __init__(self, events: list[tuple[str, str]], lock: threading.Lock) -> None:
        super().__init__()
        self.events, self.lock = events, lock

    def append(self, body: dict) -> None:
        super().append(body)
        with self.lock:
            self.events.append(("arrive", _task_of(body)))


def _task_of(body: dict) -> str:
    # the chat template puts each demo in a turn of its own; the plain one sends a single user turn
    return "toy_tones_chat" if len(body.get("messages", [])) != 2 else "toy_tones"


def _args(toy_dir, out, *extra: str) -> list[str]:
    return ["--tasks", ",".join(TASKS), "--include_path", str(toy_dir), "--output_path", str(out),
            "--log_samples", "--no_progress", "--bootstrap_iters", "100", *extra]  # fmt: skip


def test_the_next_task_is_sent_before_the_last_answer_of_the_one_before(toy_dir, tmp_path):
    events: list[tuple[str, str]] = []
    lock = threading.Lock()

    def reply(body: dict) -> str:
        with lock:
            events.append(("reply", _task_of(body)))
        return toy_answer(body)

    with FakeOpenAIServer(reply=reply, latency=(0.02, 0.3), requests=Arrivals(events, lock)) as server:
        model_args = f"model=toy,base_url={server.base_url},num_concurrent=8"
        code, _, err = run_cli(
            _args(toy_dir, tmp_path / "out", "--model", "openai", "--model_args", model_args, "--no_cache",
                  "--task_args", "n_episodes=24", "--num_fewshot", "0,1")
        )  # fmt: skip
        assert code == 0, err
    first_chat = events.index(("arrive", "toy_tones_chat"))
    before = events[:first_chat]
    in_flight = before.count(("arrive", "toy_tones")) - before.count(("reply", "toy_tones"))
    # a drained pipeline would have had all 48 answers of task 1 before sending task 2
    assert in_flight > 0 and before.count(("reply", "toy_tones")) < 48
    assert {t for kind, t in events if kind == "reply"} == set(TASKS)
    run = latest_run(tmp_path / "out")
    assert set(load_results(run)["results"]) == set(TASKS)
    assert all(len(load_samples(run, t)) == 48 for t in TASKS)
    assert gc.get_freeze_count() == 0  # the run leaves the garbage collector as it found it (a training loop)


def test_one_realtime_session_pool_serves_every_task_of_the_run(toy_dir, tmp_path):
    with FakeRealtimeServer(latency=(0.01, 0.05)) as server:
        model_args = f"model=gpt-realtime,base_url={server.base_url},num_concurrent=2"
        args = _args(toy_dir, tmp_path / "out", "--model", "realtime", "--model_args", model_args, "--no_cache",
                     "--asr", "none", "--spoken_text", "transcript", "--task_args", "n_episodes=6")  # fmt: skip
        code, _, err = run_cli(args)
        assert code == 0, err
        answered = sum(server.attempts.values())
        assert answered == 2 * 6 * 3  # two tasks, six episodes, k = 0, 1, 2
        assert server.sessions <= 2  # the pool of the run, not one per task


@pytest.mark.slow  # starts synthesis worker processes
def test_results_do_not_depend_on_the_number_of_synthesis_workers(toy_dir, tmp_path, monkeypatch):
    runs = []
    for workers in ("0", "1", "2"):
        monkeypatch.setenv("AUDIOEVAL_SYNTHESIS_WORKERS", workers)
        out = tmp_path / f"w{workers}"
        code, _, err = run_cli(
            _args(toy_dir, out, "--model", "knn-icl", "--cache_dir", str(tmp_path / f"cache{workers}"),
                  "--task_args", "n_episodes=8", "--augment", "noise_snr=5")
        )  # fmt: skip
        assert code == 0, err
        runs.append(latest_run(out))
    first = load_results(runs[0])
    assert first["timing"]["episodes_synthesized"] == 2 * 2 * 8  # clean and noisy copies of both tasks
    tasks = list(first["results"])
    for run in runs[1:]:
        assert load_results(run)["results"] == first["results"]
        assert all(load_samples(run, t) == load_samples(runs[0], t) for t in tasks)


class RecordingTopology(Topology):
    """Rank 0 of two, alone: what each collective step hands to the others is recorded, not sent."""

    def __init__(self) -> None:
        super().__init__(rank=0, world_size=2)
        self.sent: list = []

    def gather(self, obj):
        self.sent.append(obj)
        return [obj, obj]

    def broadcast(self, obj):
        return obj

    def barrier(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_an_error_in_one_task_stops_the_run_and_every_rank_is_told_which(toy_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("AUDIOEVAL_SYNTHESIS_WORKERS", "0")
    made = PreparedTask.episode

    def episode(self, index):
        if self.name == "toy_tones_chat" and index == 4:
            raise DataError("episode 4 could not be made")
        return made(self, index)

    monkeypatch.setattr(PreparedTask, "episode", episode)
    topology = RecordingTopology()
    cfg = RunConfig(tasks=",".join(TASKS), model="knn-icl", include_path=[str(toy_dir)], no_cache=True,
                    task_args={"n_episodes": 8}, show_progress=False, bootstrap_resamples=100)  # fmt: skip
    with pytest.raises(DataError, match="episode 4 could not be made"):
        conduct(cfg, topology)
    failures = [sent[1] for sent in topology.sent if isinstance(sent, tuple) and sent[1]]
    assert failures == ["while evaluating task toy_tones_chat: episode 4 could not be made"]
