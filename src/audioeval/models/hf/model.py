"""`hf`: transformers audio-chat models through their own AutoProcessor and chat template.

    --model hf --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct,dtype=bfloat16

Each request becomes a chat whose content interleaves text and audio (see hf/prompt.py); the family adapter
(hf/families.py) supplies what the checkpoint does not say. A batch is left-padded with per-sample attention
masks and decoded greedily unless the task asks for sampling, so a sample's output does not depend on the
requests it is batched with. Under `accelerate launch` each process holds a full copy of the model on its
own device and the evaluator gives it its own slice of the episodes (data parallel); `device_map=auto`
spreads one copy over several GPUs instead.

With `audio_output=true` (Qwen3-Omni; hf/speech.py) the model answers in speech as well: each Response carries
the thinker's text and a `SpokenAnswer` (the 24 kHz waveform, the text as its transcript, the generation time).
"""

from __future__ import annotations

import base64
import contextlib
import gc
import logging
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

import torch  # at module level, so a missing `hf` extra is reported by the model registry
import transformers
from pydantic import PlainValidator

from audioeval.audio.wav import encode_wav
from audioeval.config.fields import Arg, Problem
from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.models.generation import GenerationSettings, read_settings, settings_key
from audioeval.models.hf.audio import ClipBatch
from audioeval.models.hf.frontend import (
    AudioChatFrontend,
    AudioPlacement,
    ChatTemplate,
    FamilyName,
    MaxAudioSeconds,
    MaxNewTokens,
    Revision,
    SystemPrompt,
    TrustRemoteCode,
)
from audioeval.models.hf.loading import (
    load_model,
    select_device,
    torch_dtype,
)
from audioeval.models.hf.prompt import build_conversation
from audioeval.models.hf.speech import SpeechOutput, open_speech, speak, spoken_clip
from audioeval.seeds import stable_seed
from audioeval.types import Request, Response, SpokenAnswer

log = logging.getLogger("audioeval")


@dataclass
class _Prepared:
    request: Request
    prompt: str | None  # rendered prompt text (None for tokenized-template families)
    clips: ClipBatch


# The --model_args of HFModel, each declared once (config/fields.py): its type, bounds and meaning
# here, its default in the signature.
_Dtype = Annotated[Literal["auto", "float32", "float16", "bfloat16"], Arg("the weights' dtype")]
_Device = Annotated[
    str | None,
    Arg("explicit device, e.g. `cuda:1`", shown_default="rank device, else `cuda`, else `cpu`"),
]
_DeviceMap = Annotated[
    str | None, Arg("e.g. `auto`: spread one copy over all visible GPUs (models larger than one GPU)")
]
_AttnImplementation = Annotated[
    str | None,
    Arg("e.g. `sdpa`, `flash_attention_2`, `eager`", shown_default="transformers' default"),
]
_AudioOutput = Annotated[
    bool,
    Arg("answer in speech too (Qwen3-Omni with a talker): see [speech_output.md](speech_output.md)"),
]
_Speaker = Annotated[
    str | None,
    Arg(
        "with `audio_output=true`: one of `talker_config.speaker_id` (the release: Ethan, Chelsie, Aiden; "
        "any case)",
        shown_default="`ethan` (else the config's first)",
    ),
]
_TalkerMaxNewTokens = Annotated[
    int | None,
    Arg(
        "with `audio_output=true`: the talker's codec steps at most (12.5 a second: 4096 is about 5.5 "
        "minutes)",
        ge=1,
        shown_default="4096 (transformers')",
    ),
]


def _checkpoint_or_model(value: Any) -> Any:
    if isinstance(value, str):
        if not value:
            raise Problem("`pretrained` is empty: give a checkpoint folder or a Hub id.")
        return value
    if (
        isinstance(value, torch.nn.Module)
        and hasattr(value, "config")
        and callable(getattr(value, "generate", None))
    ):
        return value
    raise Problem(
        f"`pretrained` is a {type(value).__name__}: give a checkpoint folder, a Hub id, or (from Python) a "
        "transformers model already loaded, with its processor as processor=."
    )


_Pretrained = Annotated[
    Any,
    Arg(
        "checkpoint folder, or a Hub id (fetched with huggingface_hub); from Python also a transformers model "
        "already loaded (with `processor`)",
        shown_type="str or model",
    ),
    PlainValidator(_checkpoint_or_model),
]
_Processor = Annotated[
    Any,
    Arg(
        "from Python, with `pretrained` given as a loaded model: its processor (copied, yours is left as it is)",
        shown_default="the checkpoint's",
        shown_type="processor",
    ),
]


class HFModel(Model):
    name = "hf"

    def __init__(
        self,
        pretrained: _Pretrained,
        processor: _Processor = None,
        revision: Revision = None,
        family: FamilyName = None,
        dtype: _Dtype = "auto",
        device: _Device = None,
        device_map: _DeviceMap = None,
        attn_implementation: _AttnImplementation = None,
        max_new_tokens: MaxNewTokens = 256,
        trust_remote_code: TrustRemoteCode = False,
        system_prompt: SystemPrompt = None,
        audio_placement: AudioPlacement = None,
        chat_template: ChatTemplate = None,
        max_audio_seconds: MaxAudioSeconds = None,
        audio_output: _AudioOutput = False,
        speaker: _Speaker = None,
        talker_max_new_tokens: _TalkerMaxNewTokens = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not audio_output and (speaker is not None or talker_max_new_tokens is not None):
            raise ModelError(
                "--model_args speaker and talker_max_new_tokens ask for a spoken answer: add audio_output=true."
            )
        if device_map and int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ModelError(
                "--model_args device_map: under `accelerate launch` each process already holds a full model on "
                "its own GPU (data parallel). Use either several processes or device_map=auto in one process."
            )
        self.max_new_tokens = int(max_new_tokens)
        style = dict(
            system_prompt=system_prompt, audio_placement=audio_placement, max_audio_seconds=max_audio_seconds
        )
        loading = dict(dtype=dtype, device=device, device_map=device_map, revision=revision,
                       attn_implementation=attn_implementation)  # fmt: skip
        if not isinstance(pretrained, str):  # a model the caller loaded and holds: used as it is, where it is
            given = [
                k
                for k, v in {**loading, "audio_output": audio_output or None}.items()
                if v not in (None, "auto")
            ]
            model = self._adopt_loaded(pretrained, processor, given, family, chat_template, style)
        else:
            if processor is not None:
                raise ModelError("--model_args processor: give it with a model loaded in memory only.")
            speaking = (speaker, talker_max_new_tokens) if audio_output else None
            model = self._load(
                pretrained, family, bool(trust_remote_code), chat_template, style, loading, speaking
            )
        # Speaking: `speaker_model` is the whole model (thinker, talker, vocoder) and `model` its thinker, which
        # is what the text path and the diagnostics use either way.
        self.speaker_model: Any = model if self.speech is not None else None
        self.model = model.thinker if self.speech is not None else model
        self._identity = self._make_identity()
        log.info(
            "hf: %s (%s) on %s, %s, batch size %d",
            self.checkpoint.path,
            self.checkpoint.family.title,
            self.model.device,
            self.model.dtype,
            self.batch_size,
        )

    def _adopt_loaded(
        self,
        model: Any,
        processor: Any,
        given: list[str],
        family: str | None,
        chat_template: str | None,
        style: dict[str, Any],
    ) -> Any:
        if given:
            raise ModelError(
                f"--model_args {', '.join(given)}: the model given in memory is used as it is (its device, dtype "
                "and attention); set these when you load it (audio_output: save it and pass its folder)."
            )
        self.frontend = AudioChatFrontend.of_loaded(
            model, processor, family=family, chat_template=chat_template, **style
        )
        self._adopt_frontend()
        self.speech: SpeechOutput | None = None
        self.speaks = False
        self.cacheable = False  # its weights are the caller's, and may change before the next run
        return model

    def _load(
        self,
        pretrained: str,
        family: str | None,
        trust_remote_code: bool,
        chat_template: str | None,
        style: dict[str, Any],
        loading: dict[str, Any],
        speaking: tuple[str | None, int | None] | None,
    ) -> Any:
        model_dtype = torch_dtype(loading["dtype"])  # validated before anything loads
        self.frontend = AudioChatFrontend.open(
            pretrained,
            revision=loading["revision"],
            family=family,
            trust_remote_code=trust_remote_code,
            chat_template=chat_template,
            **style,
        )
        self._adopt_frontend()
        # checked from config.json before any weight loads
        self.speech = open_speech(self.checkpoint, *speaking) if speaking is not None else None
        self.speaks = self.speech is not None
        return load_model(
            self.checkpoint,
            dtype=model_dtype,
            device=select_device(loading["device"]),
            device_map=loading["device_map"],
            attn_implementation=loading["attn_implementation"],
            trust_remote_code=trust_remote_code,
            model_class=self.checkpoint.family.speech_class if self.speech is not None else None,
        )

    def _adopt_frontend(self) -> None:
        self.checkpoint = self.frontend.checkpoint
        self.processor = self.frontend.processor
        self.style = self.frontend.style
        self.audio = self.frontend.audio
        self.sampling_rate = self.frontend.sampling_rate

    # ------------------------------------------------------------------------------------------------------
    def _make_identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            **self.frontend.identity(),
            "dtype": str(self.model.dtype).removeprefix("torch."),
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
            "default_max_new_tokens": self.max_new_tokens,
            "transformers": transformers.__version__,
            **({"audio_output": self.speech.identity()} if self.speech is not None else {}),
        }

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    # ------------------------------------------------------------------------------------------------------
    def generate(self, requests: list[Request]) -> list[Response]:
        with _evaluating(self.model):
            return self._generate(requests)

    def _generate(self, requests: list[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        groups: dict[str, list[int]] = defaultdict(list)
        for i, request in enumerate(requests):
            groups[settings_key(request.gen_kwargs)].append(i)
        for indices in groups.values():
            first = requests[indices[0]]
            settings = read_settings(first.gen_kwargs, self.max_new_tokens, first.rid.task)
            for start in range(0, len(indices), self.batch_size):
                part = indices[start : start + self.batch_size]
                for i, response in zip(
                    part, self._generate_batch([requests[i] for i in part], settings), strict=True
                ):
                    out[i] = response
        return [r for r in out if r is not None]

    def _generate_batch(self, requests: list[Request], settings: GenerationSettings) -> list[Response]:
        """Run a batch; on running out of GPU memory, halve it (outputs do not depend on batch composition)."""
        try:
            return self._run(requests, settings)
        except torch.cuda.OutOfMemoryError as err:
            torch.cuda.empty_cache()
            if len(requests) == 1:
                seconds = requests[0].audio_seconds
                return [
                    Response(
                        text=None, error=f"out of GPU memory on one request ({seconds:.1f} s of audio): {err}"
                    )
                ]
            half = len(requests) // 2
            log.warning(
                "hf: out of GPU memory on a batch of %d; retrying as %d + %d.",
                len(requests),
                half,
                len(requests) - half,
            )
            return self._generate_batch(requests[:half], settings) + self._generate_batch(
                requests[half:], settings
            )

    def _run(self, requests: list[Request], settings: GenerationSettings) -> list[Response]:
        if self.speech is not None:
            # One request at a time: the talker samples its codes (as the release does) from torch's one global
            # generator, so in a batch each answer's audio would depend on the requests beside it. Alone and
            # seeded from its own content, a request gets the same audio at any batch size.
            return [self._run_spoken(request, self.speech, settings) for request in requests]
        started = time.perf_counter()
        prepared = [self._prepare(r) for r in requests]
        inputs = self._encode(prepared)
        if settings.do_sample:
            keys = [r.content_key(self.identity) for r in requests]
            torch.manual_seed(stable_seed(self.seed, *keys) % (2**63))
        with torch.inference_mode():
            sequences = self.model.generate(**inputs, **self._generate_kwargs(settings))
        if not torch.is_tensor(sequences):
            sequences = sequences.sequences
        new_tokens = sequences[:, inputs["input_ids"].shape[1] :]
        texts = self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        elapsed = (time.perf_counter() - started) / len(requests)
        responses = []
        for item, text in zip(prepared, texts, strict=True):
            info = {"truncated_audio": item.clips.truncated} if item.clips.truncated else {}
            responses.append(Response(text=settings.cut(text), latency_s=elapsed, info=info))
        return responses

    def _run_spoken(self, request: Request, speech: SpeechOutput, settings: GenerationSettings) -> Response:
        if settings.num_beams > 1:
            raise ModelError(
                f"{self.checkpoint.path}: task {request.rid.task!r} asks for num_beams={settings.num_beams}; "
                "with audio_output=true the thinker decodes greedily or samples (the talker reads its hidden states)."
            )
        started = time.perf_counter()
        item = self._prepare(request)
        inputs = self._encode([item])
        # Seeded from the request and the checkpoint's content, not its folder: the same checkpoint anywhere says
        # the same thing (the thinker's text is greedy unless the task samples; the talker always samples).
        content = {k: v for k, v in self.identity.items() if k != "pretrained"}
        torch.manual_seed(stable_seed(self.seed, request.content_key(content)) % (2**63))
        thinker_kwargs = self._generate_kwargs(settings)
        eos = getattr(self.speaker_model.generation_config, "eos_token_id", None)
        if eos is not None:
            thinker_kwargs["eos_token_id"] = eos
        with torch.inference_mode():
            result = speak(self.speaker_model, inputs, speech, thinker_kwargs)
        elapsed = time.perf_counter() - started
        if result is None:
            return Response(
                text=None,
                latency_s=elapsed,
                error=f"{self.checkpoint.path.name}: the talker made no speech codes (it ended speech at once, "
                f"or talker_max_new_tokens={speech.talker_max_new_tokens} left no step after its first)",
            )
        sequences, samples = result
        text = settings.cut(
            self.processor.batch_decode(
                sequences[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True
            )[0]
        )
        info = {"truncated_audio": item.clips.truncated} if item.clips.truncated else {}
        spoken = SpokenAnswer(spoken_clip(samples), transcript=text, generation_s=elapsed)
        return Response(text=text, latency_s=elapsed, info=info, spoken=spoken)

    def next_token_logits(self, requests: list[Request]) -> Any:
        """Logits of the first generated token, one row per request (float32, on the CPU): a diagnostic to
        check that the audio reaches the model (different clips, same text: different logits)."""
        inputs = self._encode([self._prepare(r) for r in requests])
        with torch.inference_mode():
            logits = self.model(**inputs).logits
        return logits[:, -1, :].float().cpu()

    # ------------------------------------------------------------------------------------------------------
    def _prepare(self, request: Request) -> _Prepared:
        clips = self.audio.prepare(request.clips)
        if self.style.family.tokenized_template:
            return _Prepared(request, None, clips)
        return _Prepared(request, self.frontend.prompt(request), clips)

    def _encode(self, prepared: list[_Prepared]) -> dict[str, Any]:
        try:
            if self.style.family.tokenized_template:
                inputs = self._encode_tokenized(prepared)
            else:
                audio = [a for p in prepared for a in p.clips.arrays]
                # Padding is a text setting only: a top-level `padding` would also reach the feature extractor
                # and pad every clip to the longest of the batch.
                inputs = self.processor(
                    text=[p.prompt for p in prepared],
                    audio=audio or None,
                    text_kwargs={"padding": True, "padding_side": "left"},
                    audio_kwargs={"sampling_rate": self.sampling_rate},
                    return_tensors="pt",
                    **self.style.family.processor_kwargs,
                )
        except ModelError:
            raise
        except Exception as err:
            raise ModelError(
                f"{self.checkpoint.path}: the processor rejected a batch ({type(err).__name__}: {err})."
            ) from err
        return self._to_device(dict(inputs))

    def _encode_tokenized(self, prepared: list[_Prepared]) -> Any:
        """Voxtral: mistral-common tokenizes the chat, audio included (as base64 WAV)."""
        conversations = []
        for p in prepared:
            payloads = [base64.b64encode(encode_wav(a, self.sampling_rate)).decode() for a in p.clips.arrays]
            conversations.append(
                build_conversation(
                    p.request,
                    self.style,
                    self.processor,
                    audio_block=partial(_base64_audio_block, payloads),
                )
            )
        inputs = self.processor.apply_chat_template(conversations, tokenize=True, return_dict=True)
        begin = self.processor.tokenizer.convert_tokens_to_ids("[BEGIN_AUDIO]")
        for p, row in zip(prepared, inputs["input_ids"].tolist(), strict=True):
            if row.count(begin) != len(p.clips.arrays):
                raise ModelError(
                    f"{self.checkpoint.path}: request for task {p.request.rid.task!r} has {len(p.clips.arrays)} "
                    f"clip(s) but its tokenized prompt holds {row.count(begin)} audio segment(s)."
                )
        return inputs

    def _to_device(self, inputs: dict[str, Any]) -> dict[str, Any]:
        device, dtype = self.model.device, self.model.dtype
        out = {}
        for key, value in inputs.items():
            if hasattr(value, "to") and hasattr(value, "is_floating_point"):
                value = value.to(device, dtype=dtype) if value.is_floating_point() else value.to(device)
            out[key] = value
        return out

    def _generate_kwargs(self, settings: GenerationSettings) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": settings.max_new_tokens,
            "do_sample": settings.do_sample,
            "num_beams": settings.num_beams,
            "pad_token_id": self.processor.tokenizer.pad_token_id,
        }
        if settings.do_sample:
            for name in ("temperature", "top_p", "top_k"):
                if getattr(settings, name) is not None:
                    kwargs[name] = getattr(settings, name)
        if settings.repetition_penalty is not None:
            kwargs["repetition_penalty"] = settings.repetition_penalty
        return kwargs

    def close(self) -> None:
        self.model = None
        self.speaker_model = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


@contextlib.contextmanager
def _evaluating(model: Any) -> Any:
    """Inference in eval mode (no dropout); a model the caller was training goes back to training after."""
    training = bool(getattr(model, "training", False))
    if training:
        model.eval()
    try:
        yield
    finally:
        if training:
            model.train()


def _base64_audio_block(payloads: list[str], index: int) -> dict[str, Any]:
    return {"type": "audio", "base64": payloads[index]}
