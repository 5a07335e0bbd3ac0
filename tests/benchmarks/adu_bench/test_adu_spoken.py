"""ADU-Bench on a model that answers in speech: the judges see the ASR text of each spoken answer (the paper
converts audio responses into text), or the model's transcript when asked, and the report's spoken-answer
rows name the ASR."""

from __future__ import annotations

import json
from pathlib import Path

from adu_helpers import is_judge, response_first

from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text

SAID = "Saturn has 2 moons."
HEARD = "saturn has many moons"


def reply(body):
    if is_judge(body):
        return "9" if response_first(body) else "7"
    return SAID


def _run(server: FakeOpenAIServer, tmp: Path, spoken_text: str):
    cfg = RunConfig(
        tasks="adu_general",
        model="tts",
        model_args={"text_model": "openai", "model": "lalm", "base_url": server.base_url},
        limit="3",
        output_path=str(tmp / "out"),
        log_samples=True,
        cache_dir=str(tmp / "cache"),
        judge=["openai"],
        judge_args=[{"model": "judge-a", "base_url": server.base_url}],
        show_progress=False,
        bootstrap_resamples=100,
        asr="openai",
        asr_args={"model": "whisper-test", "base_url": server.base_url},
        spoken_text=spoken_text,
    )
    return Path(run_evaluation(cfg)["run_dir"])


def _judge_prompts(server: FakeOpenAIServer) -> list[str]:
    return [prompt_text(r) for r in server.requests if is_judge(r)]


def test_judges_see_the_asr_text_and_the_report_names_the_asr(tmp_path: Path):
    with FakeOpenAIServer(reply=reply, transcribe=lambda wav, fields: HEARD) as server:
        run = _run(server, tmp_path, "asr")
        prompts = _judge_prompts(server)
    assert len(prompts) == 3 * 2 and all(HEARD in p and SAID not in p for p in prompts)
    for line in (run / "samples_adu_general.jsonl").open():
        record = json.loads(line)
        assert record["response"] == HEARD and record["spoken"]["transcript"] == SAID
        assert record["scores"]["spoken_text_wer"] == 0.25  # "2" is "two"; "many" is not
    report = (run / "adu_bench_report.md").read_text()
    assert (
        "| tts (text_model=openai, model=lalm) [spoken; scored: ASR openai (whisper-test)] | judge-a |"
        in report
    )
    spoken = report.split("## Spoken answers (ASR: openai (whisper-test))")[1].split("##")[0]
    assert "the judges saw the ASR text" in spoken
    assert "| ADU-General | openai (whisper-test) | 0.25 (n=3) |" in spoken
    summary = json.loads((run / "adu_bench_report.json").read_text())
    assert (
        summary["spoken"]["asr"] == "openai (whisper-test)"
        and summary["spoken"]["datasets"]["general"]["wer"]["mean"] == 0.25
    )


def test_judges_see_the_models_transcript_when_asked(tmp_path: Path):
    with FakeOpenAIServer(reply=reply, transcribe=lambda wav, fields: HEARD) as server:
        run = _run(server, tmp_path, "transcript")
        prompts = _judge_prompts(server)
    assert prompts and all(SAID in p and HEARD not in p for p in prompts)
    report = (run / "adu_bench_report.md").read_text()
    assert (
        "[spoken; scored: its own transcript]" in report
        and "the judges saw the model's own transcript" in report
    )
