"""Model backends, registered by name. Modules are imported only when their backend is used, so a missing
optional dependency (transformers, openai, vllm) only matters to the backend that needs it."""

from __future__ import annotations

import importlib
from typing import Any

from audioeval.errors import ModelError, unknown_name_message
from audioeval.models.base import Model, check_model_args

# name -> (module, class, pip extra that provides its dependencies)
MODEL_REGISTRY: dict[str, tuple[str, str, str | None]] = {
    "chance": ("audioeval.models.baselines.chance", "ChanceModel", None),
    "hf": ("audioeval.models.hf.model", "HFModel", "hf"),
    "vllm": ("audioeval.models.vllm_backend", "VLLMModel", "vllm"),
    "openai": ("audioeval.models.openai_chat", "OpenAIChatModel", "api"),
    "demo-majority": ("audioeval.models.baselines.demo_majority", "DemoMajorityModel", None),
    "knn-icl": ("audioeval.models.baselines.knn_icl", "KnnIclModel", None),
    "cascade": ("audioeval.models.cascade", "CascadeModel", None),
    "pocketsphinx": ("audioeval.models.pocketsphinx_asr", "PocketSphinxModel", None),
    "hf-chat": ("audioeval.models.text_chat", "HFChatModel", "hf"),
    "dsp-oracle": ("audioeval.models.baselines.dsp_oracle", "DspOracleModel", None),
    "shortcut": ("audioeval.models.baselines.shortcut", "ShortcutModel", None),
}


def model_names() -> list[str]:
    return sorted(MODEL_REGISTRY)


def get_model_class(name: str) -> type[Model]:
    if name not in MODEL_REGISTRY:
        raise ModelError("--model: " + unknown_name_message("model", name, MODEL_REGISTRY))
    module_name, class_name, extra = MODEL_REGISTRY[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        hint = f" Install it with: pip install 'audioeval[{extra}]'." if extra else ""
        raise ModelError(f"--model {name}: a dependency is missing ({err.name or err}).{hint}") from err
    return getattr(module, class_name)


def create_model(name: str, model_args: dict[str, Any], batch_size: int, seed: int) -> Model:
    cls = get_model_class(name)
    check_model_args(cls, model_args)
    return cls(batch_size=batch_size, seed=seed, **model_args)
