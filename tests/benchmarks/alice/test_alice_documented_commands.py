"""The OpenAI-compatible commands that README.md and docs/alice.md give for ALICE run as written against a local
server that behaves like the real endpoint (it refuses what OpenAI refuses for reasoning models)."""

from __future__ import annotations

import base64
import re
import shlex
from pathlib import Path

import pytest

from audioeval.audio.wav import decode_wav
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text, reasoning_model_refusal
from tests.alice_testutil import isolated_cache  # noqa: F401
from tests.conftest import latest_run, load_results, run_cli

ROOT = Path(__file__).resolve().parents[3]


def documented_commands(*docs: str) -> list[list[str]]:
    """Every `audioeval ...` command in the docs' code blocks, continuation lines joined, comments dropped."""
    commands = []
    for doc in docs:
        text = (ROOT / doc).read_text().replace("\\\n", " ")
        for line in text.splitlines():
            if line.lstrip().startswith("audioeval "):
                commands.append(shlex.split(line.split("#")[0])[1:])
    return commands


def flag_values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def local(kv: str, base_url: str) -> str:
    """The same key=value list pointed at the local server instead of the real endpoint."""
    return re.sub(r",?base_url=[^,]*", "", kv) + f",base_url={base_url}"


def judge_reply(body):
    text = prompt_text(body)
    if "shows reasoning" in text:
        return "Explanation: it reasons.\nResult: YES"
    return "Explanation: it agrees.\nResult: YES"


@pytest.mark.slow
def test_documented_reasoning_judge_commands_are_accepted(tmp_path):
    commands = [
        args
        for argv in documented_commands("README.md", "docs/alice.md")
        for args in flag_values(argv, "--judge_args")
        if re.search(r"model=(o\d|gpt-5)", args)
    ]
    assert len(commands) >= 2  # README and docs/alice.md each document one
    for i, judge_args in enumerate(commands):
        with FakeOpenAIServer(reply=judge_reply) as server:
            code, _out, err = run_cli(
                ["--tasks", "alice_s1_ser_cot", "--model", "chance", "--limit", "1", "--num_fewshot", "0"]
                + ["--judge", "openai", "--judge_args", local(judge_args, server.base_url)]
                + ["--output_path", str(tmp_path / f"o{i}"), "--cache_dir", str(tmp_path / f"c{i}")]
                + ["--bootstrap_iters", "0", "--no_progress"]
            )
        assert code == 0, err
        assert server.requests, judge_args
        for body in server.requests:
            assert reasoning_model_refusal(body) is None, (judge_args, body)
            assert body["max_completion_tokens"] == 1024 and "temperature" not in body
        results = load_results(latest_run(tmp_path / f"o{i}"))
        judge = next(iter(results["judges"].values()))
        assert judge["failed_verdicts"] == 0, judge_args
        assert results["results"]["alice_s1_ser_cot"]["0-shot"]["format_strict"] == 1.0


def test_documented_gemini_command_sends_the_documented_request(tmp_path):
    (argv,) = [a for a in documented_commands("docs/alice.md") if "model=gemini-2.5-flash" in " ".join(a)]
    (model_args,), (gen_kwargs,) = flag_values(argv, "--model_args"), flag_values(argv, "--gen_kwargs")
    with FakeOpenAIServer(reply=lambda body: "ANGRY") as server:
        code, _out, err = run_cli(
            ["--tasks", "alice_s1_ser_ceq,alice_s3_ser_ceq", "--model", "openai", "--limit", "1"]
            + ["--model_args", local(model_args, server.base_url), "--gen_kwargs", gen_kwargs]
            + [
                "--num_fewshot",
                "1",
                "--output_path",
                str(tmp_path / "o"),
                "--no_cache",
                "--bootstrap_iters",
                "0",
            ]
            + ["--no_progress"]
        )
    assert code == 0, err
    assert len(server.requests) == 2
    for body in server.requests:
        # thinking off, greedy, the token limit as max_tokens
        assert (
            body["reasoning_effort"] == "none" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
        )
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["system", "user", "assistant", "user"]
        assert isinstance(body["messages"][2]["content"], str)
        for user in (body["messages"][1], body["messages"][3]):
            audio = user["content"][0]
            assert audio["type"] == "input_audio" and audio["input_audio"]["format"] == "wav"
            _samples, rate = decode_wav(base64.b64decode(audio["input_audio"]["data"]))
            assert rate == 16000
    stage1, stage3 = sorted(server.requests, key=lambda b: len(b["messages"][3]["content"]), reverse=True)
    assert [p["type"] for p in stage1["messages"][3]["content"]] == ["input_audio", "text"]
    assert [p["type"] for p in stage3["messages"][3]["content"]] == ["input_audio"]  # stage 3: audio only
