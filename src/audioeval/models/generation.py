"""A task's `generation_kwargs` (merged with --gen_kwargs), read once into settings every local backend
understands. Greedy unless the task asks for sampling."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from audioeval.config.fields import Arg, FieldProblem, check_values
from audioeval.errors import ModelError

_ALIASES = {"max_gen_toks": "max_new_tokens", "max_tokens": "max_new_tokens", "stop": "until"}
_SETTINGS: dict[str, Any] = {
    "max_new_tokens": Annotated[int, Arg("the most tokens generated (default: the backend's)", ge=1)],
    "do_sample": Annotated[bool, Arg("sample instead of greedy decoding")],
    "temperature": Annotated[float | None, Arg("sampling temperature; > 0 samples", ge=0)],
    "top_p": Annotated[float | None, Arg("nucleus sampling mass", ge=0)],
    "top_k": Annotated[int | None, Arg("sample among the k most likely tokens", ge=0)],
    "until": Annotated[str | list[str], Arg("stop strings: the text is cut at the first")],
    "num_beams": Annotated[int, Arg("beam search width", ge=1)],
    "repetition_penalty": Annotated[float | None, Arg("penalty on repeated tokens", ge=0)],
}
_KNOWN = tuple(_SETTINGS)
#: the generation settings every local backend (and every baseline, which ignores them) accepts, aliases
#: included: name -> its declaration (config/fields.py)
LOCAL_GEN_KWARGS: dict[str, Any] = {
    **_SETTINGS,
    **{alias: _SETTINGS[name] for alias, name in _ALIASES.items()},
}


@dataclass(frozen=True)
class GenerationSettings:
    max_new_tokens: int
    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    until: tuple[str, ...] = ()
    num_beams: int = 1
    repetition_penalty: float | None = None

    def cut(self, text: str) -> str:
        """The text up to the first stop string."""
        for stop in self.until:
            if stop and stop in text:
                text = text[: text.index(stop)]
        return text


def settings_key(gen_kwargs: dict[str, Any]) -> str:
    return json.dumps(gen_kwargs, sort_keys=True, default=str)


def read_settings(gen_kwargs: dict[str, Any], default_max_new_tokens: int, task: str) -> GenerationSettings:
    values: dict[str, Any] = {}
    for key, value in gen_kwargs.items():
        name = _ALIASES.get(key, key)
        if name not in _KNOWN:
            raise ModelError(
                f"task {task!r}: generation setting {key!r} is not understood by local backends. "
                f"Known: {', '.join(_KNOWN)} (aliases: {', '.join(_ALIASES)})."
            )
        values[name] = value
    try:
        check_values(values, _SETTINGS)
    except FieldProblem as problem:
        raise ModelError(f"task {task!r}: {problem.key} {problem.words}.") from None
    until = values.get("until") or ()
    if isinstance(until, str):
        until = (until,)
    temperature = values.get("temperature")
    do_sample = bool(values.get("do_sample", temperature is not None and float(temperature) > 0))
    if do_sample and temperature is not None and float(temperature) <= 0:
        raise ModelError(f"task {task!r}: do_sample=true needs temperature > 0, got {temperature}.")
    return GenerationSettings(
        max_new_tokens=int(values.get("max_new_tokens", default_max_new_tokens)),
        do_sample=do_sample,
        temperature=float(temperature) if do_sample and temperature is not None else None,
        top_p=float(values["top_p"]) if do_sample and values.get("top_p") is not None else None,
        top_k=int(values["top_k"]) if do_sample and values.get("top_k") is not None else None,
        until=tuple(str(s) for s in until),
        num_beams=int(values.get("num_beams", 1)),
        repetition_penalty=(
            float(values["repetition_penalty"]) if values.get("repetition_penalty") is not None else None
        ),
    )
