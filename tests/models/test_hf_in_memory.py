"""`--model hf` on a transformers model and processor already loaded in Python (a training loop's): the same
answers as from its folder, its weights used as they are now, and the caller's objects left as they were."""

from __future__ import annotations

import pytest
import torch

import audioeval
from tests.conftest import TOY

RUN = dict(
    tasks=["toy_tones"], include_path=str(TOY), limit=3, num_fewshot=[0, 1], log_samples=True, no_progress=True,
    bootstrap_iters=0,
)  # fmt: skip


def _loaded(folder):
    from transformers import AutoProcessor, Qwen2AudioForConditionalGeneration

    return Qwen2AudioForConditionalGeneration.from_pretrained(folder), AutoProcessor.from_pretrained(folder)


def _answers(result) -> list[str | None]:
    return [s.response for s in result.samples["toy_tones"]]


def test_a_loaded_model_answers_as_its_folder_does_and_stays_as_the_caller_left_it(tiny_models):
    folder = str(tiny_models["qwen2_audio"])
    model, processor = _loaded(folder)
    model.train()  # mid-training
    padding_side = processor.tokenizer.padding_side
    from_folder = audioeval.evaluate(model="hf", model_args={"pretrained": folder}, **RUN)
    in_memory = audioeval.evaluate(
        model="hf", model_args={"pretrained": model, "processor": processor}, **RUN
    )
    assert _answers(in_memory) == _answers(from_folder)
    assert in_memory.record.model.identity["fingerprint"] == "in memory"
    recorded = in_memory.to_dict()["model"]["model_args"]
    assert recorded == {
        "pretrained": "<Qwen2AudioForConditionalGeneration in memory>",
        "processor": "<Qwen2AudioProcessor in memory>",
    }
    assert model.training and processor.tokenizer.padding_side == padding_side


def test_the_weights_it_holds_now_are_the_ones_evaluated(tiny_models, tmp_path):
    model, processor = _loaded(str(tiny_models["qwen2_audio"]))
    args = {"pretrained": model, "processor": processor}
    before = audioeval.evaluate(model="hf", model_args=args, cache_dir=tmp_path, **RUN)
    with torch.no_grad():  # a training step, of a sort
        model.get_output_embeddings().weight.mul_(-1.0)
    after = audioeval.evaluate(model="hf", model_args=args, cache_dir=tmp_path, **RUN)
    assert _answers(after) != _answers(before)  # nothing came from the response cache
    assert after.record.timing["cached_responses"] == 0
    again = audioeval.evaluate(model="hf", model_args=args, cache_dir=tmp_path, **RUN)
    assert _answers(again) == _answers(after)  # same weights, same answers


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"processor": None}, "a model given in memory needs its processor too"),
        ({"dtype": "bfloat16"}, "--model_args dtype: the model given in memory is used as it is"),
    ],
)
def test_what_a_loaded_model_cannot_take_is_one_line(tiny_models, args, message):
    model, processor = _loaded(str(tiny_models["qwen2_audio"]))
    with pytest.raises(audioeval.ModelError, match=message):
        audioeval.evaluate(
            model="hf", model_args={"pretrained": model, "processor": processor, **args}, **RUN
        )


def test_an_object_that_is_not_a_model_is_refused_naming_what_pretrained_takes():
    with pytest.raises(audioeval.AudioEvalError, match="`pretrained` is a list: give a checkpoint folder"):
        audioeval.evaluate(model="hf", model_args={"pretrained": [1, 2]}, **RUN)
