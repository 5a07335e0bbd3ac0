"""Real runs for the viewer tests, made once per session with offline models: toy runs (fast), and small runs of
each benchmark (AudioICL-Bench with dsp-oracle and chance, ALICE with chance, ADU-Bench with a local fake
OpenAI-compatible server answering as model and judge)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.testing.fake_openai import FakeOpenAIServer, prompt_text

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"
JUDGE_MODEL = "judge-x"


def make_run(out: Path, tasks: str, model: str, log_samples: bool = True, **kw) -> Path:
    cfg = RunConfig(
        tasks=tasks,
        model=model,
        output_path=str(out),
        log_samples=log_samples,
        show_progress=False,
        bootstrap_resamples=100,
        cache_dir=str(out / "cache"),
        **kw,
    )
    return Path(run_evaluation(cfg)["run_dir"])


def chat_reply(body: dict) -> str:
    """The fake endpoint as model and judge: the model's answer carries a mark derived from its prompt, and the
    judge scores answers marked [ok] and gives no number for the others (a judge failure)."""
    text = prompt_text(body)
    if body.get("model") == JUDGE_MODEL:
        return "Score: 7" if "[ok]" in text else "I would rather not say."
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"Here is my answer ({digest[:6]}). " + ("[ok]" if int(digest[0], 16) % 3 else "[??]")


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("viewer_runs")


@pytest.fixture(scope="session")
def toy_runs(runs_root: Path) -> list[Path]:
    """The toy group evaluated by two baselines, with sample logs."""
    return [
        make_run(runs_root / "toy", "toy", model, include_path=[str(TOY)], limit="4")
        for model in ("chance", "demo-majority")
    ]


@pytest.fixture(scope="session")
def toy_run_without_samples(runs_root: Path) -> Path:
    return make_run(
        runs_root / "plain", "toy", "chance", log_samples=False, include_path=[str(TOY)], limit="3"
    )


@pytest.fixture(scope="session")
def audioicl_runs(runs_root: Path) -> list[Path]:
    tasks = "audioicl_audio_remap,audioicl_audio_length"
    return [
        make_run(runs_root / "audioicl", tasks, model, limit="3", num_fewshot=[0, 1, 3])
        for model in ("dsp-oracle", "chance")
    ]


@pytest.fixture(scope="session")
def alice_run(runs_root: Path) -> Path:
    return make_run(
        runs_root / "alice", "alice_s1_ser_ceq,alice_s1_asr_cot", "chance", limit="4", num_fewshot=[0, 1]
    )


@pytest.fixture(scope="session")
def adu_run(runs_root: Path) -> Path:
    with FakeOpenAIServer(reply=chat_reply) as server:
        return make_run(
            runs_root / "adu",
            "adu_general,adu_skill",
            "openai",
            model_args={"model": "lalm", "base_url": server.base_url, "max_retries": 0},
            judge=["openai"],
            judge_args=[{"base_url": server.base_url, "model": JUDGE_MODEL, "max_retries": 0}],
            limit="4",
        )
