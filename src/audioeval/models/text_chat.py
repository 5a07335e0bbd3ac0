"""`--model hf-chat`: a Hugging Face causal language model used as a text chat backend — the LLM stage of
`--model cascade` (`llm=hf`), or a text-only model on its own.

    --model hf-chat --model_args pretrained=/models/Llama-3-8B-Instruct,dtype=bfloat16

Conversations go through the tokenizer's chat template (or `chat_template=FILE`) with the generation prompt,
batches are left-padded, decoding is greedy unless `temperature` > 0. Requests holding audio are refused:
put an ASR stage in front with `--model cascade`. Weights load from a local folder or a Hub id (which
downloads only if it is not in the local cache).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.base import Model
from audioeval.models.fingerprint import fingerprint
from audioeval.types import AudioPart, Request, Response

DEFAULT_MAX_NEW_TOKENS = 256


def chat_messages(request: Request) -> list[dict[str, str]]:
    messages = []
    for m in request.messages:
        if any(isinstance(p, AudioPart) for p in m.parts):
            raise ModelError(
                f"model 'hf-chat' is text-only but task {request.rid.task!r} sends audio; use --model cascade "
                "(e.g. asr=pocketsphinx,llm=hf,pretrained=...) to transcribe it first."
            )
        messages.append({"role": m.role, "content": m.text})
    return messages


class HFChatModel(Model):
    name = "hf-chat"

    def __init__(
        self,
        *,
        pretrained: Annotated[str, Arg("a causal LM checkpoint folder, or a Hub id", min_length=1)],
        dtype: Annotated[
            Literal["auto", "float32", "bfloat16", "float16"],
            Arg("the weights' dtype; `auto`: bfloat16 on a GPU that has it, else float32"),
        ] = "auto",
        device: Annotated[
            str | None, Arg("e.g. `cuda:1`", shown_default="`cuda` if available, else `cpu`")
        ] = None,
        chat_template: Annotated[
            str | None, Arg("path to a Jinja chat template", shown_default="the tokenizer's")
        ] = None,
        trust_remote_code: Annotated[bool, Arg("enabled in transformers only when given")] = False,
        max_length: Annotated[
            int | None, Arg("the longest prompt, in tokens; a longer one is a counted failure", ge=1)
        ] = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.pretrained = str(pretrained)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype == "auto":
            dtype = (
                "bfloat16" if self.device.startswith("cuda") and torch.cuda.is_bf16_supported() else "float32"
            )
        self.dtype = dtype
        self.max_length = int(max_length) if max_length else None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(
                self.pretrained, trust_remote_code=trust_remote_code
            )
            self.model = AutoModelForCausalLM.from_pretrained(
                self.pretrained, dtype=getattr(torch, dtype), trust_remote_code=trust_remote_code
            )
        except (OSError, ValueError) as err:
            raise ModelError(f"--model_args pretrained={self.pretrained}: cannot load it ({err}).") from err
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers decorates .to() and loses self
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.template_text = None
        if chat_template:
            path = Path(str(chat_template)).expanduser()
            if not path.is_file():
                raise ModelError(f"--model_args chat_template={path}: no such file.")
            self.template_text = path.read_text(encoding="utf-8")
            self.tokenizer.chat_template = self.template_text
        if not self.tokenizer.chat_template:
            raise ModelError(
                f"{self.pretrained}: the tokenizer has no chat template; pass chat_template=FILE (a Jinja file)."
            )
        folder = Path(self.pretrained).expanduser()
        self.fingerprint = fingerprint(folder) if folder.is_dir() else None

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "pretrained": self.pretrained,
            "fingerprint": self.fingerprint,
            "dtype": self.dtype,
            "chat_template": hashlib.sha256(self.template_text.encode()).hexdigest()[:16]
            if self.template_text
            else None,
            "max_length": self.max_length,
        }

    @property
    def display_name(self) -> str:
        return f"hf-chat__{Path(self.pretrained).name}"

    def render_prompt(self, request: Request) -> str:
        """The exact text the model is asked to continue."""
        text = self.tokenizer.apply_chat_template(
            chat_messages(request), tokenize=False, add_generation_prompt=True
        )
        return str(text)  # a str with tokenize=False (the stubs cover every mode at once)

    def generate(self, requests: list[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):  # one generate() call per distinct set of generation kwargs
            groups.setdefault(json.dumps(r.gen_kwargs, sort_keys=True, default=str), []).append(i)
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                batch = indices[start : start + self.batch_size]
                for i, response in zip(
                    batch, self._generate_batch([requests[i] for i in batch]), strict=True
                ):
                    out[i] = response
        return [r for r in out if r is not None]

    def _generate_batch(self, requests: list[Request]) -> list[Response]:
        started = time.perf_counter()
        prompts = [self.render_prompt(r) for r in requests]
        out: list[Response | None] = [None] * len(requests)
        if self.max_length:
            for i, prompt in enumerate(prompts):
                n = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
                if n > self.max_length:
                    out[i] = Response(
                        text=None, error=f"prompt of {n} tokens exceeds max_length={self.max_length}"
                    )
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            texts = self._continue([prompts[i] for i in todo], requests[0].gen_kwargs)
            elapsed = (time.perf_counter() - started) / len(todo)
            for i, text in zip(todo, texts, strict=True):
                out[i] = Response(text=text, latency_s=elapsed)
        return [r for r in out if r is not None]

    def _continue(self, prompts: list[str], gen_kwargs: dict[str, Any]) -> list[str]:
        """Greedy (or sampled, with temperature > 0) continuations of left-padded prompts."""
        import torch

        kwargs = dict(gen_kwargs)
        max_new = int(kwargs.pop("max_new_tokens", kwargs.pop("max_tokens", DEFAULT_MAX_NEW_TOKENS)))
        temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
        settings: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": temperature > 0}
        if temperature > 0:
            settings["temperature"] = temperature
            if kwargs.get("top_p") is not None:
                settings["top_p"] = float(kwargs["top_p"])
            torch.manual_seed(self.seed)
        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            generated = self.model.generate(
                **{k: v.to(self.device) for k, v in encoded.items()},
                pad_token_id=self.tokenizer.pad_token_id,
                **settings,
            )
        new_tokens = generated[:, encoded["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return [_cut_at_stop(t, kwargs.get("stop")).strip() for t in texts]


def _cut_at_stop(text: str, stop: Any) -> str:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    cut = min((text.find(s) for s in stops if s and s in text), default=len(text))
    return text[:cut]
