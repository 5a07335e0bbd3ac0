"""Bad checkpoints and bad arguments give errors that name the file or argument and say what to do."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from audioeval.errors import ModelError
from audioeval.models.hf.checkpoint import fingerprint
from audioeval.models.hf.frontend import AudioChatFrontend
from audioeval.models.registry import create_model


def _copy(tiny_models, family, tmp_path):
    target = tmp_path / family
    shutil.copytree(tiny_models[family], target)
    return target


def test_missing_folder(tmp_path):
    with pytest.raises(ModelError, match="no such folder"):
        AudioChatFrontend.open(str(tmp_path / "absent"))


def test_pretrained_is_required():
    with pytest.raises(ModelError, match="pretrained=... is required"):
        AudioChatFrontend.open(None)


def test_folder_without_config(tmp_path):
    with pytest.raises(ModelError, match="config.json is missing"):
        AudioChatFrontend.open(str(tmp_path))


def test_folder_without_processor(tiny_models, tmp_path):
    folder = _copy(tiny_models, "qwen2_audio", tmp_path)
    (folder / "processor_config.json").unlink()
    with pytest.raises(ModelError, match=r"no processor .*processor.save_pretrained"):
        AudioChatFrontend.open(str(folder))


def test_folder_without_chat_template(tiny_models, tmp_path):
    folder = _copy(tiny_models, "audio_flamingo3", tmp_path)
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(ModelError, match=r"no chat template.*chat_template=/path/to/template.jinja"):
        AudioChatFrontend.open(str(folder))


def test_architecture_without_adapter_names_the_supported_ones(tiny_models, tmp_path):
    folder = _copy(tiny_models, "qwen2_audio", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "whisper"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError) as err:
        AudioChatFrontend.open(str(folder))
    message = str(err.value)
    assert "model_type 'whisper' has no adapter" in message
    for title in (
        "Qwen2-Audio",
        "Qwen2.5-Omni",
        "Qwen3-Omni",
        "Phi-4-multimodal",
        "Voxtral",
        "Gemma 3n",
        "Audio Flamingo 3",
    ):
        assert title in message


def test_bad_model_args(tiny_models):
    with pytest.raises(
        ModelError, match="dtype=int8: model 'hf' must be one of: auto, float32, float16, bfloat16"
    ):
        create_model("hf", {"pretrained": str(tiny_models["qwen2_audio"]), "dtype": "int8"}, 1, 0)
    with pytest.raises(ModelError, match="unknown argument for model 'hf' 'pretrain'"):
        create_model("hf", {"pretrain": "x"}, 1, 0)


def test_fingerprint_follows_file_contents(tiny_models, tmp_path):
    folder = _copy(tiny_models, "qwen2_audio", tmp_path)
    before = fingerprint(folder)
    assert before == fingerprint(tiny_models["qwen2_audio"])  # path-independent
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-7] ^= 0x01  # one bit of one weight
    weights.write_bytes(bytes(data))
    assert fingerprint(folder) != before


def test_fingerprint_samples_large_weight_files(tmp_path):
    rng = np.random.default_rng(0)
    size = (64 << 20) + 4096  # just above the size hashed whole
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    (tmp_path / "a" / "model.safetensors").write_bytes(rng.bytes(size))
    (tmp_path / "b" / "model.safetensors").write_bytes(rng.bytes(size))
    assert fingerprint(tmp_path / "a") != fingerprint(tmp_path / "b")
    shutil.copy(tmp_path / "a" / "model.safetensors", tmp_path / "b" / "model.safetensors")
    assert fingerprint(tmp_path / "a") == fingerprint(tmp_path / "b")


def test_missing_transformers_names_the_hf_extra(monkeypatch):
    import sys

    from audioeval.models.registry import get_model_class

    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers raises ImportError
    monkeypatch.delitem(sys.modules, "audioeval.models.hf.model", raising=False)
    with pytest.raises(ModelError, match=r"pip install 'audioeval\[hf\]'"):
        get_model_class("hf")


def test_old_transformers_is_refused(monkeypatch, tiny_models):
    import transformers

    monkeypatch.setattr(transformers, "__version__", "4.57.1")
    with pytest.raises(ModelError, match=r"need transformers>=5 \(found 4.57.1\)"):
        AudioChatFrontend.open(str(tiny_models["qwen2_audio"]))
