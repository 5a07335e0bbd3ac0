"""The whole spoken-answer path offline: `--model tts` over a local baseline, heard by pocketsphinx in its
worker process; the same numbers on one process or two."""

from __future__ import annotations

import sqlite3
from typing import ClassVar

import pytest

from audioeval.models.base import Model
from audioeval.types import Request, Response
from tests.conftest import latest_run, load_results, load_samples, run_cli, run_two_processes
from tests.speech.speech_helpers import toy_run_args

TIMED = ("spoken_time_to_first_audio_s", "spoken_real_time_factor")


def _without_timings(run) -> tuple[dict, list[dict]]:
    results = load_results(run)["results"]
    for per_k in results.values():
        for block in per_k.values():
            for key in [k for k in block if k.startswith(TIMED)]:
                block.pop(key)
    samples = load_samples(run, "toy_tones")
    for s in samples:
        for key in TIMED:
            s["scores"].pop(key)
        for key in ("time_to_first_audio_s", "generation_s", "real_time_factor"):
            s["spoken"].pop(key)
    return results, samples


@pytest.mark.slow
def test_tts_heard_by_pocketsphinx_offline_and_cached(tmp_path):
    args = toy_run_args(tmp_path / "out", tmp_path / "cache", "tts", "text_model=chance", "--limit", "2")
    code, _out, err = run_cli(args)
    assert code == 0, err
    run = latest_run(tmp_path / "out")
    results = load_results(run)
    assert results["speech"]["asr"] == "pocketsphinx" and "smoke-test" in results["speech"]["note"]
    assert results["timing"]["endpoints"]["asr pocketsphinx"]["requests"] > 0
    for s in load_samples(run, "toy_tones"):
        assert s["spoken"]["transcript"] in ("low", "high")  # what chance drew, spoken
        assert s["response"] == s["spoken"]["asr_text"] and s["spoken"]["audio"]["sampling_rate"] == 24000
    with sqlite3.connect(tmp_path / "cache" / "responses.sqlite") as db:
        kinds = dict(db.execute("SELECT kind, COUNT(*) FROM responses GROUP BY kind").fetchall())
    assert kinds["asr"] >= 1 and kinds["generate"] == 6
    code, _out, err = run_cli(args)  # a rerun transcribes nothing again
    assert code == 0, err
    assert (
        load_results(latest_run(tmp_path / "out"))["timing"]["endpoints"]["asr pocketsphinx"]["requests"] == 0
    )


@pytest.mark.slow
def test_one_or_two_processes_give_the_same_spoken_results(tmp_path):
    one = toy_run_args(tmp_path / "one", tmp_path / "c1", "tts", "text_model=chance", "--limit", "3")
    code, _out, err = run_cli(one)
    assert code == 0, err
    two = run_two_processes(
        toy_run_args(tmp_path / "two", tmp_path / "c2", "tts", "text_model=chance", "--limit", "3")
    )
    assert two.returncode == 0, two.stderr[-3000:]
    run_one, run_two = latest_run(tmp_path / "one"), latest_run(tmp_path / "two")
    assert load_results(run_two)["world_size"] == 2
    assert _without_timings(run_one) == _without_timings(run_two)


@pytest.mark.slow
@pytest.mark.parametrize(
    "model_args, message",
    [
        ("voice=en", "--model tts needs text_model=NAME"),
        ("text_model=chance,voice=xx-nowhere", "--model_args voice=xx-nowhere"),
        ("text_model=openai,model=m,base_url=http://127.0.0.1:9/v1,num_concurrent=0", "text model 'openai'"),
    ],
)
def test_bad_tts_arguments_are_one_clear_line(tmp_path, model_args, message):
    code, _out, err = run_cli(toy_run_args(tmp_path / "o", tmp_path / "c", "tts", model_args))
    assert code == 2 and message in err and "Traceback" not in err, err


class BatchRecorder(Model):
    """A batch text model (as hf-chat is) answering from the request's content; notes each call's size."""

    name = "batch-recorder"
    calls: ClassVar[list[int]] = []

    def generate(self, requests: list[Request]) -> list[Response]:
        BatchRecorder.calls.append(len(requests))
        keys = [r.content_key(self.identity) for r in requests]
        return [Response(text="high" if int(key, 16) % 2 else "low") for key in keys]


def _spoken_answers(run) -> list[tuple]:
    return [
        (
            s["episode_id"],
            s["shots"],
            s["spoken"]["transcript"],
            s["spoken"]["audio"]["sha256"],
            s["response"],
        )
        for s in load_samples(run, "toy_tones")
    ]


@pytest.mark.slow
def test_tts_hands_a_batch_text_model_batches_and_the_answers_do_not_depend_on_their_size(tmp_path):
    text_model = f"text_model={__name__}:BatchRecorder"
    runs = {}
    for size in (1, 4):
        BatchRecorder.calls.clear()
        args = toy_run_args(tmp_path / f"b{size}", tmp_path / f"c{size}", "tts", text_model, "--limit", "4")
        code, _out, err = run_cli([*args, "--batch_size", str(size)])
        assert code == 0, err
        assert sum(BatchRecorder.calls) == 12 and max(BatchRecorder.calls) == size, BatchRecorder.calls
        runs[size] = _spoken_answers(latest_run(tmp_path / f"b{size}"))
    assert runs[1] == runs[4] and {t for _, _, t, _, _ in runs[1]} == {"low", "high"}
