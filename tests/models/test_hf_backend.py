"""The `hf` backend on tiny checkpoints of three real architectures, loaded through `pretrained=<dir>`."""

from __future__ import annotations

import logging

import pytest
import torch
from model_test_helpers import TINY_FAMILIES, noise, tone, user_request

from audioeval.errors import ModelError


@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_audio_reaches_the_model(hf_models, family):
    """Same text, different audio: different next-token logits; same audio: the same logits."""
    model = hf_models(family)
    requests = [
        user_request("Query ", clip, " Label:") for clip in (tone(220), tone(2200), noise(1), noise(1))
    ]
    logits = model.next_token_logits(requests)
    different = (logits[0] - logits[1]).abs().max().item()
    different_noise = (logits[0] - logits[2]).abs().max().item()
    same = (logits[2] - logits[3]).abs().max().item()
    assert different > 1e-5 and different_noise > 1e-5
    assert same <= 1e-6
    assert different > 100 * same


def _mixed_requests():
    """Requests of different lengths, clip counts (0-3), sampling rates and turn layouts."""
    return [
        user_request(
            "Demo ",
            tone(200),
            " Label: low\nQuery ",
            tone(2000, 1.0),
            " Label:",
            system="Answer low or high.",
        ),
        user_request(tone(300, 0.3, rate=8000), " Answer"),
        user_request("no audio here, only a longer text prompt to make the padding matter"),
        user_request(tone(500, 2.0), "x", tone(700, 0.2, rate=22050), "y", noise(3, 1.5), "z"),
        user_request("[Query] ", noise(4, 0.7), " Label:"),
        user_request(tone(900, 1.2, rate=44100)),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("family", TINY_FAMILIES)
def test_greedy_outputs_do_not_depend_on_batch_size(hf_models, family):
    model = hf_models(family)
    requests = _mixed_requests()
    model.batch_size = 1
    one = [r.text for r in model.generate(requests)]
    model.batch_size = 4
    four = [r.text for r in model.generate(requests)]
    assert one == four
    assert len(set(one)) > 1  # the outputs differ between requests, so the comparison means something
    assert all(isinstance(t, str) and t for t in one)


def test_placeholder_in_request_text_is_an_error(hf_models):
    model = hf_models("qwen2_audio")
    request = user_request("look: <|AUDIO|> and ", tone(300), " Label:")
    with pytest.raises(ModelError, match=r"1 audio clip\(s\) but its prompt holds 2 audio placeholder"):
        model.generate([request])


def test_truncation_is_recorded_and_warned(hf_models, caplog):
    model = hf_models("qwen2_audio")  # tiny checkpoints take at most 4 s per clip
    with caplog.at_level(logging.WARNING, logger="audioeval"):
        long, short = model.generate([user_request(tone(400, 5.0), " x"), user_request(tone(400, 3.0), " x")])
    assert long.info == {"truncated_audio": [{"clip": 0, "seconds": 5.0, "kept_seconds": 4.0}]}
    assert short.info == {}
    assert "at most 4.0 s of audio" in caplog.text


def test_sampling_settings_and_stop_strings(hf_models):
    model = hf_models("qwen2_audio")
    request = user_request(tone(300), " Label:", gen_kwargs={"max_new_tokens": 5})
    (greedy,) = model.generate([request])
    stop = greedy.text[2:4]
    (cut,) = model.generate(
        [user_request(tone(300), " Label:", gen_kwargs={"max_new_tokens": 5, "until": [stop]})]
    )
    assert cut.text == greedy.text[: greedy.text.index(stop)]
    with pytest.raises(ModelError, match="'beam_width' is not understood"):
        model.generate([user_request("x", gen_kwargs={"beam_width": 2})])


def test_identity_names_model_family_dtype_and_fingerprint(hf_models, tiny_models):
    identity = hf_models("qwen2_5_omni").identity
    assert identity["model"] == "hf"
    assert identity["pretrained"] == str(tiny_models["qwen2_5_omni"])
    assert identity["family"] == "qwen2_5_omni"
    assert identity["dtype"] == "float32"
    assert len(identity["fingerprint"]) == 64
    assert identity["fingerprint"] != hf_models("qwen2_audio").identity["fingerprint"]


def test_omni_thinker_is_loaded_from_the_full_checkpoint(hf_models):
    model = hf_models("qwen2_5_omni").model
    assert type(model).__name__ == "Qwen2_5OmniThinkerForConditionalGeneration"
    assert next(model.parameters()).abs().sum().item() > 0  # weights loaded, not left at zero
    assert torch.isfinite(next(model.parameters())).all()


@pytest.mark.slow
def test_greedy_even_when_the_checkpoint_samples_by_default(hf_models, tiny_models, tmp_path):
    """Released generation_config.json files often set do_sample/temperature; tasks stay greedy unless they ask."""
    import json
    import shutil

    from audioeval.models.registry import create_model

    folder = tmp_path / "sampling_default"
    shutil.copytree(tiny_models["qwen2_audio"], folder)
    config = json.loads((folder / "generation_config.json").read_text())
    config.update(do_sample=True, temperature=1.5, top_k=50)
    (folder / "generation_config.json").write_text(json.dumps(config))
    model = create_model("hf", {"pretrained": str(folder)}, 2, 0)
    requests = _mixed_requests()[:4]
    torch.manual_seed(1)
    first = [r.text for r in model.generate(requests)]
    torch.manual_seed(2)
    second = [r.text for r in model.generate(requests)]
    assert first == second == [r.text for r in hf_models("qwen2_audio").generate(requests)]
    assert model.identity["fingerprint"] != hf_models("qwen2_audio").identity["fingerprint"]
