"""`--model cascade`: an ASR stage in front of a text chat stage, like the paper's Whisper+LLM rows.

    --model cascade --model_args asr=pocketsphinx,llm=openai,llm_model=gpt-4o-mini,base_url=https://...
    --model cascade --model_args asr=pocketsphinx,llm=hf,pretrained=/models/Llama-3-8B-Instruct

Every audio part of the conversation is replaced by its transcript inside a clearly marked wrapper
(`transcript_format`, default `[Audio transcript: "{text}"]`) before the text stage sees it; text, turns and
generation settings pass through unchanged. Each stage is any registered model: `asr` defaults to the
offline `pocketsphinx`; an audio-language model (e.g. `asr=openai`) transcribes when asked with
`asr_prompt`. `llm=hf` means the `hf-chat` text backend. Arguments prefixed `asr_` go to the ASR stage
(`asr_model=whisper-1`, `asr_base_url=...`), `llm_model` is the text stage's `model`, and every other
argument goes to the text stage; each stage checks its own arguments. Transcripts are computed once per
distinct clip and kept for the run; the cache identity holds both stages' identities.
"""

from __future__ import annotations

import string
from typing import Annotated, Any

from pydantic import AfterValidator

from audioeval.config.fields import Arg, Problem
from audioeval.errors import ModelError
from audioeval.models.base import Model, check_init_args
from audioeval.types import AudioClip, AudioPart, Failure, Message, Request, RequestId, Response, TextPart

DEFAULT_FORMAT = '[Audio transcript: "{text}"]'
DEFAULT_ASR_PROMPT = "Transcribe the speech in this audio exactly. Reply with the transcript only."
LLM_ALIASES = {"hf": "hf-chat"}
OWN_ARGS = ("asr", "llm", "llm_model", "transcript_format", "asr_prompt")


def split_args(model_args: dict[str, Any]) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
    """(asr name, asr args, llm name, llm args) from cascade --model_args."""
    if not model_args.get("llm"):
        raise ModelError(
            "--model cascade needs llm=..., the text stage: e.g. llm=openai,llm_model=NAME,base_url=URL "
            "or llm=hf,pretrained=FOLDER."
        )
    asr = str(model_args.get("asr") or "pocketsphinx")
    llm = LLM_ALIASES.get(str(model_args["llm"]), str(model_args["llm"]))
    if "cascade" in (asr, llm):
        raise ModelError("--model cascade: a stage cannot itself be a cascade.")
    asr_args = {k[4:]: v for k, v in model_args.items() if k.startswith("asr_") and k != "asr_prompt"}
    llm_args = {k: v for k, v in model_args.items() if k not in OWN_ARGS and not k.startswith("asr_")}
    if model_args.get("llm_model") is not None:
        llm_args["model"] = model_args["llm_model"]
    return asr, asr_args, llm, llm_args


def _one_text_field(transcript_format: str) -> str:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(transcript_format) if f is not None]
    except ValueError:  # an unmatched brace
        fields = []
    if fields != ["text"]:
        raise Problem("it must contain {text} exactly once and no other {...} field.")
    return transcript_format


class CascadeModel(Model):
    name = "cascade"

    def __init__(
        self,
        *,
        llm: Annotated[
            str,
            Arg(
                "the text stage: a registered model (`hf` means `hf-chat`); its arguments go beside",
                min_length=1,
            ),
        ],
        asr: Annotated[
            str, Arg("the ASR stage: a registered model; its arguments go as `asr_KEY=VALUE`", min_length=1)
        ] = "pocketsphinx",
        llm_model: Annotated[str | None, Arg("the text stage's `model`")] = None,
        transcript_format: Annotated[
            str,
            Arg("how a transcript stands in for its clip: `{text}` exactly once"),
            AfterValidator(_one_text_field),
        ] = DEFAULT_FORMAT,
        asr_prompt: Annotated[
            str, Arg("what an audio-language model ASR stage is asked")
        ] = DEFAULT_ASR_PROMPT,
        batch_size: int = 1,
        seed: int = 0,
        **stage_args: Any,
    ) -> None:
        super().__init__(batch_size=batch_size, seed=seed)
        from audioeval.models.registry import create_model

        args = {"asr": asr, "llm": llm, "llm_model": llm_model, **stage_args}
        asr_name, asr_args, llm_name, llm_args = split_args(args)
        self.transcript_format = transcript_format
        self.asr_prompt = asr_prompt
        self.asr = create_model(asr_name, asr_args, batch_size, seed)
        try:
            self.llm = create_model(llm_name, llm_args, batch_size, seed)
        except BaseException:
            self.asr.close()
            raise
        self._transcripts: dict[str, str] = {}

    @classmethod
    def check_args(cls, model_args: dict[str, Any]) -> None:
        from audioeval.models.registry import get_model_class

        asr, asr_args, llm, llm_args = split_args(model_args)
        check_init_args(cls, {k: v for k, v in model_args.items() if k in OWN_ARGS})
        for stage, name, args in (("asr", asr, asr_args), ("llm", llm, llm_args)):
            try:
                get_model_class(name).check_args(args)
            except ModelError as err:
                prefix = "asr_" if stage == "asr" else ""
                raise ModelError(
                    f"--model cascade, {stage} stage {name!r} (its arguments are given as {prefix}KEY=VALUE): {err}"
                ) from err

    @classmethod
    def code_modules(cls, model_args: dict[str, Any]) -> list[str]:
        from audioeval.models.registry import get_model_class

        asr, asr_args, llm, llm_args = split_args(model_args)
        stages = [get_model_class(asr).code_modules(asr_args), get_model_class(llm).code_modules(llm_args)]
        return [cls.__module__, *stages[0], *stages[1]]

    @classmethod
    def check_gen_kwargs(cls, gen_kwargs: dict[str, Any], source: str, model_args: dict[str, Any]) -> None:
        """Generation settings go to the text stage, so they are its to declare."""
        from audioeval.models.registry import get_model_class

        _asr, _asr_args, llm, llm_args = split_args(model_args)
        get_model_class(llm).check_gen_kwargs(gen_kwargs, source, llm_args)

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "asr": self.asr.identity,
            "asr_prompt": self.asr_prompt,
            "llm": self.llm.identity,
            "transcript_format": self.transcript_format,
        }

    @property
    def display_name(self) -> str:
        return f"cascade__{self.asr.display_name}__{self.llm.display_name}"

    @property
    def request_chunk_size(self) -> int:
        return self.llm.request_chunk_size

    def close(self) -> None:
        self.asr.close()
        self.llm.close()

    # ------------------------------------------------------------------------------------------------------
    def _transcribe(self, clips: dict[str, AudioClip]) -> dict[str, str]:
        """Transcribe the clips not seen yet; returns errors by clip hash."""
        todo = [(key, clip) for key, clip in clips.items() if key not in self._transcripts]
        errors: dict[str, str] = {}
        chunk = max(1, self.asr.request_chunk_size)
        for start in range(0, len(todo), chunk):
            batch = todo[start : start + chunk]
            requests = [
                Request(
                    messages=(Message("user", (TextPart(self.asr_prompt), AudioPart(clip))),),
                    gen_kwargs={"max_new_tokens": 448, "temperature": 0.0},
                    rid=RequestId("cascade:asr", 0, start + i),
                )
                for i, (_key, clip) in enumerate(batch)
            ]
            for (key, _clip), response in zip(batch, self.asr.generate(requests), strict=True):
                if response.ok:
                    self._transcripts[key] = " ".join((response.text or "").split())
                else:
                    errors[key] = response.error or "no transcript"
        return errors

    def _as_text(self, message: Message) -> Message:
        parts: list[str] = []
        for p in message.parts:
            if isinstance(p, AudioPart):
                parts.append(self.transcript_format.format(text=self._transcripts[p.clip.sha256]))
            else:
                parts.append(p.text)
        return Message(role=message.role, parts=(TextPart("".join(parts)),))

    def generate(self, requests: list[Request]) -> list[Response]:
        clips = {c.sha256: c for r in requests for c in r.clips}
        errors = self._transcribe(clips)
        out: list[Response | None] = [None] * len(requests)
        text_requests: list[tuple[int, Request]] = []
        for i, request in enumerate(requests):
            failed = [errors[c.sha256] for c in request.clips if c.sha256 in errors]
            if failed:
                out[i] = Response(
                    text=None, failure=Failure("asr", f"ASR stage {self.asr.name!r} failed: {failed[0]}")
                )
                continue
            text_requests.append(
                (
                    i,
                    Request(
                        messages=tuple(self._as_text(m) for m in request.messages),
                        gen_kwargs=request.gen_kwargs,
                        rid=request.rid,
                        choices=request.choices,
                        shown=request.shown,
                    ),
                )
            )
        chunk = max(1, self.llm.request_chunk_size)
        for start in range(0, len(text_requests), chunk):
            batch = text_requests[start : start + chunk]
            for (i, _request), response in zip(batch, self.llm.generate([r for _, r in batch]), strict=True):
                transcripts = [self._transcripts[c.sha256] for c in requests[i].clips]
                response.info = {**response.info, "transcripts": transcripts}
                out[i] = response
        return [r for r in out if r is not None]
