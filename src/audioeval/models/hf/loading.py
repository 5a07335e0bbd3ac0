"""Loading a checkpoint's processor and model with transformers, and choosing the device.

The processor is always the checkpoint's own (AutoProcessor). Two narrow workarounds, both logged:
- Omni processors carry a video processor that needs torchvision; audio-only prompts never use it, so when
  torchvision is missing the processor is built without it instead of failing.
- Audio Flamingo 3's processor insists on one clip per prompt although its model fuses any number in order;
  the per-prompt check is replaced by the generic one (one placeholder per clip over the batch).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
from typing import Any

from audioeval.errors import ModelError
from audioeval.models.hf.checkpoint import Checkpoint, check_processor_files

log = logging.getLogger("audioeval")

_DTYPES = ("auto", "float32", "float16", "bfloat16")


def torch_dtype(name: str | None) -> Any:
    import torch

    name = "auto" if name in (None, "") else str(name)
    if name not in _DTYPES:
        raise ModelError(f"--model_args dtype={name!r}: expected one of {', '.join(_DTYPES)}.")
    return "auto" if name == "auto" else getattr(torch, name)


def select_device(device: str | None) -> Any:
    """The explicit device, else this rank's device under `accelerate launch`, else cuda, else cpu."""
    import torch

    if device:
        return torch.device(device)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        from accelerate import PartialState

        return PartialState().device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _processor_class(checkpoint: Checkpoint) -> Any:
    import transformers

    for name in ("processor_config.json", "preprocessor_config.json"):
        file = checkpoint.path / name
        if file.is_file():
            cls_name = json.loads(file.read_text()).get("processor_class")
            if cls_name and hasattr(transformers, cls_name):
                return getattr(transformers, cls_name)
    return None


class _LeftOut(str):
    """Stands in for the video processor while transformers assembles the processor (a str, so the processor's
    JSON dump that transformers logs on the way still works)."""


_NOT_LOADED = _LeftOut("left out: audio prompts need no video processor")


def _load_without_video_processor(checkpoint: Checkpoint, trust_remote_code: bool) -> Any:
    """The checkpoint's processor with its video processor left out (None).

    Newer transformers take an already built sub-processor as a keyword of `from_pretrained` and skip loading
    it, so a placeholder goes in and is replaced by None afterwards; older ones build the sub-processors in
    `_get_arguments_from_pretrained`, overridden below to the same effect.
    """
    from transformers.processing_utils import MODALITY_TO_AUTOPROCESSOR_MAPPING

    base: Any = _processor_class(checkpoint)
    if base is None:
        raise ModelError(f"{checkpoint.path}: processor_config.json names no processor_class.")
    video_attributes = [name for name in base.get_attributes() if "video_processor" in name]

    class AudioOnlyProcessor(base):
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name in video_attributes and (argument is None or argument is _NOT_LOADED):
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

        @classmethod
        def _get_arguments_from_pretrained(cls, path: Any, processor_dict: Any = None, **kwargs: Any) -> list:
            kwargs.pop("subfolder", None)
            for attribute in video_attributes:
                kwargs.pop(attribute, None)  # the placeholder: never passed on to a sub-processor's loader
            args: list[Any] = []
            for attribute in cls.get_attributes():
                if attribute in video_attributes:
                    args.append(None)
                elif "tokenizer" in attribute:
                    args.append(cls._load_tokenizer_from_pretrained(attribute, path, **kwargs))
                else:
                    args.append(MODALITY_TO_AUTOPROCESSOR_MAPPING[attribute].from_pretrained(path, **kwargs))
            return args

    AudioOnlyProcessor.__name__ = AudioOnlyProcessor.__qualname__ = base.__name__
    placeholders = dict.fromkeys(video_attributes, _NOT_LOADED)
    processor = AudioOnlyProcessor.from_pretrained(
        str(checkpoint.path), trust_remote_code=trust_remote_code, **placeholders
    )
    for name in video_attributes:
        setattr(processor, name, None)
    log.info(
        "torchvision is not installed: %s loaded without its video processor (audio prompts do not use it).",
        base.__name__,
    )
    return processor


def _relax_one_clip_check(processor: Any) -> None:
    from transformers.processing_utils import ProcessorMixin

    processor.validate_inputs = functools.partial(ProcessorMixin.validate_inputs, processor)


MIN_TRANSFORMERS = 5


def check_transformers_version() -> None:
    import transformers

    major = int(transformers.__version__.split(".")[0])
    if major < MIN_TRANSFORMERS:
        raise ModelError(
            f"the hf and vllm backends need transformers>={MIN_TRANSFORMERS} (found {transformers.__version__}): "
            "pip install -U 'transformers>=5'."
        )


def load_processor(
    checkpoint: Checkpoint, trust_remote_code: bool = False, chat_template: str | None = None
) -> Any:
    check_transformers_version()
    check_processor_files(checkpoint)
    family = checkpoint.family
    from transformers import AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(str(checkpoint.path), trust_remote_code=trust_remote_code)
    except Exception as err:
        missing_torchvision = importlib.util.find_spec("torchvision") is None
        if family.video_processor_optional and missing_torchvision:
            processor = _load_without_video_processor(checkpoint, trust_remote_code)
        else:
            hint = ""
            if family.tokenized_template and importlib.util.find_spec("mistral_common") is None:
                hint = " Voxtral's tokenizer needs mistral-common: pip install 'mistral-common[audio]'."
            raise ModelError(
                f"{checkpoint.path}: AutoProcessor could not load the processor ({type(err).__name__}: {err}).{hint}"
            ) from err
    return prepare_processor(processor, checkpoint, chat_template)


def prepare_processor(processor: Any, checkpoint: Checkpoint, chat_template: str | None = None) -> Any:
    """The processor checked and set up for audio chats (chat template, left padding); it is changed in place,
    so a caller's own processor is handed over as a copy."""
    from transformers import ProcessorMixin

    family = checkpoint.family
    if not isinstance(processor, ProcessorMixin):
        raise ModelError(
            f"{checkpoint.path}: the processor is only a {type(processor).__name__}, not an audio processor (feature "
            "extractor + tokenizer): save the full processor with processor.save_pretrained(folder), or load it "
            "with AutoProcessor."
        )
    if not family.tokenized_template and getattr(processor, "audio_token", None) is None:
        raise ModelError(f"{checkpoint.path}: {type(processor).__name__} defines no audio_token.")
    if chat_template:
        try:
            with open(chat_template, encoding="utf-8") as handle:
                processor.chat_template = handle.read()
        except OSError as err:
            raise ModelError(f"--model_args chat_template={chat_template}: cannot read it ({err}).") from err
    elif processor.chat_template is None and getattr(processor.tokenizer, "chat_template", None):
        processor.chat_template = processor.tokenizer.chat_template
    if processor.chat_template is None and not family.tokenized_template:
        raise ModelError(
            f"{checkpoint.path}: no chat template (no chat_template.jinja, chat_template.json or template in "
            "tokenizer_config.json). Add the model's template there, or pass "
            "--model_args chat_template=/path/to/template.jinja."
        )
    if family.relax_one_clip_check:
        _relax_one_clip_check(processor)
    tokenizer = processor.tokenizer
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return processor


def audio_sampling_rate(processor: Any, source: str) -> int:
    extractor = getattr(processor, "audio_processor", None) or getattr(processor, "feature_extractor", None)
    rate = getattr(extractor, "sampling_rate", None)
    if not rate:
        raise ModelError(f"{source}: the processor has no audio feature extractor with a sampling_rate.")
    return int(rate)


def load_model(
    checkpoint: Checkpoint,
    *,
    dtype: Any,
    device: Any,
    device_map: str | None,
    attn_implementation: str | None,
    trust_remote_code: bool,
    model_class: str | None = None,
) -> Any:
    """The family's model class (`model_class`: another one, e.g. the class that also speaks), loaded."""
    import transformers

    class_name = model_class or checkpoint.family.model_class
    cls = getattr(transformers, class_name, None)
    if cls is None:
        raise ModelError(
            f"transformers {transformers.__version__} has no {class_name} "
            f"(needed for {checkpoint.family.title}); upgrade transformers."
        )
    kwargs: dict[str, Any] = {"dtype": dtype}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if device_map:
        kwargs["device_map"] = device_map
    if trust_remote_code:
        kwargs["trust_remote_code"] = True
    try:
        model = cls.from_pretrained(str(checkpoint.path), **kwargs)
    except Exception as err:
        raise ModelError(
            f"{checkpoint.path}: {cls.__name__}.from_pretrained failed ({type(err).__name__}: {err})."
        ) from err
    if not device_map:
        model = model.to(device)
    model.eval()
    return model
