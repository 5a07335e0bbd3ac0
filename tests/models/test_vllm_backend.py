"""The `vllm` backend with vLLM replaced by a recorder: engine arguments, prompts, audio lists, sampling."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from model_test_helpers import tone, user_request

from audioeval.errors import ModelError
from audioeval.models.hf.frontend import AudioChatFrontend
from audioeval.models.registry import create_model

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"


class FakeLLM:
    instances: list[FakeLLM] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls = []
        FakeLLM.instances.append(self)

    def generate(self, inputs, sampling_params=None, use_tqdm=True):
        self.calls.append((inputs, sampling_params))
        return [
            types.SimpleNamespace(
                outputs=[
                    types.SimpleNamespace(
                        text=f"out{i}:{len(item.get('multi_modal_data', {}).get('audio', []))}"
                    )
                ]
            )
            for i, item in enumerate(inputs)
        ]


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    FakeLLM.instances = []
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = FakeSamplingParams
    module.__version__ = "0.0-test"
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_missing_vllm_names_the_extra(monkeypatch, tiny_models):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(ModelError, match=r"pip install 'audioeval\[vllm\]'"):
        create_model("vllm", {"pretrained": str(tiny_models["qwen2_audio"])}, 1, 0)


def _toy_tasks():
    from audioeval.config.registry import TaskRegistry
    from audioeval.run.prepared import prepare_tasks

    registry = TaskRegistry.discover([str(TOY)])
    names, _groups = registry.select("toy_tones")
    return prepare_tasks(registry, names, num_fewshot=None, task_args={}, limit="2", seed=0, gen_kwargs={})


def test_engine_is_sized_from_the_tasks_and_gets_the_hf_prompts(fake_vllm, tiny_models):
    model = create_model(
        "vllm",
        {"pretrained": str(tiny_models["qwen2_audio"]), "tensor_parallel_size": 2, "max_model_len": 4096},
        8,
        0,
    )
    tasks = _toy_tasks()
    model.prepare(tasks)
    (llm,) = FakeLLM.instances
    assert llm.kwargs["limit_mm_per_prompt"] == {"audio": 4}  # k=3: three demos and the query
    assert llm.kwargs["tensor_parallel_size"] == 2 and llm.kwargs["max_model_len"] == 4096
    assert llm.kwargs["model"] == str(tiny_models["qwen2_audio"])

    requests = [r for r, _ in tasks[0].requests_for(tasks[0].episode(0))]
    responses = model.generate(requests)
    inputs, params = llm.calls[0]
    frontend = AudioChatFrontend.open(str(tiny_models["qwen2_audio"]))
    for request, item, param, response in zip(requests, inputs, params, responses, strict=True):
        assert item["prompt"] == frontend.prompt(request)
        audio = item["multi_modal_data"]["audio"]
        assert len(audio) == len(request.clips) == item["prompt"].count("<|AUDIO|>")
        for (array, rate), clip in zip(audio, request.clips, strict=True):  # same clips, same order
            assert rate == 16000 and np.allclose(array, clip.samples, atol=1e-6)
        assert param.kwargs == {"max_tokens": 8, "temperature": 0.0}
        assert response.text.endswith(f":{len(request.clips)}")


def test_sampling_and_stop_strings_reach_sampling_params(fake_vllm, tiny_models):
    model = create_model(
        "vllm", {"pretrained": str(tiny_models["qwen2_5_omni"]), "limit_audio_per_prompt": 2}, 1, 5
    )
    request = user_request(
        tone(300, rate=8000), " x", gen_kwargs={"temperature": 0.8, "top_p": 0.9, "until": ["\n"]}
    )
    model.generate([request])
    (llm,) = FakeLLM.instances
    inputs, (param,) = llm.calls[0]
    assert (
        param.kwargs["temperature"] == 0.8 and param.kwargs["top_p"] == 0.9 and param.kwargs["stop"] == ["\n"]
    )
    assert isinstance(param.kwargs["seed"], int)
    (array, rate) = inputs[0]["multi_modal_data"]["audio"][0]
    assert rate == 16000 and len(array) == 8000  # resampled from 8 kHz
    assert "<|audio_bos|><|AUDIO|><|audio_eos|>" in inputs[0]["prompt"]


def test_request_above_the_engine_limit_is_refused(fake_vllm, tiny_models):
    model = create_model(
        "vllm", {"pretrained": str(tiny_models["qwen2_audio"]), "limit_audio_per_prompt": 1}, 1, 0
    )
    with pytest.raises(ModelError, match="limit_audio_per_prompt=2"):
        model.generate([user_request(tone(200), tone(300))])


def test_text_only_requests_carry_no_multimodal_data(fake_vllm, tiny_models):
    model = create_model("vllm", {"pretrained": str(tiny_models["audio_flamingo3"])}, 1, 0)
    model.generate([user_request("only text")])
    (llm,) = FakeLLM.instances
    assert llm.kwargs["limit_mm_per_prompt"] == {"audio": 1}
    assert "multi_modal_data" not in llm.calls[0][0][0]
