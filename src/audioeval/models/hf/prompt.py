"""From a harness Request to the prompt text a Hugging Face processor expects, with the audio where it stands.

A request's messages become chat messages whose content interleaves `{"type": "text"}` and
`{"type": "audio"}` blocks (placement "template": the checkpoint's chat template writes each clip), or one
string with the family's inline placeholder where each clip stands (placement "inline"). Two checks make
sure no clip is dropped, added or moved:

- a probe render, in which every text part is replaced by a unique marker, must show the markers and the
  audio placeholders in exactly the order of the request's parts (a template that hoists all audio to the
  front of a message, or skips a part, fails here);
- the real prompt must contain exactly one audio placeholder per clip (text that itself contains the
  placeholder token fails here).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audioeval.errors import ModelError
from audioeval.models.hf.families import FamilyAdapter
from audioeval.types import AudioPart, Request, TextPart

_MARK = "\u27e6{}\u27e7"  # ⟦i⟧
_MARK_RE = r"\u27e6(\d+)\u27e7"


@dataclass(frozen=True)
class PromptStyle:
    family: FamilyAdapter
    placement: str  # "template" or "inline"
    system_prompt: str | None  # used when the request has no system turn; None or "" adds none
    source: str  # the checkpoint, for error messages


def _merged_messages(request: Request, style: PromptStyle) -> list[tuple[str, list[TextPart | AudioPart]]]:
    """The request's turns with the default system prompt added, or the system turn folded into the first
    user turn for families whose template has no system role."""
    turns: list[tuple[str, list[TextPart | AudioPart]]] = [(m.role, list(m.parts)) for m in request.messages]
    if not any(role == "system" for role, _ in turns) and style.system_prompt:
        turns.insert(0, ("system", [TextPart(style.system_prompt)]))
    if not style.family.system_role and turns and turns[0][0] == "system":
        system_parts = turns.pop(0)[1]
        for i, (role, parts) in enumerate(turns):
            if role == "user":
                turns[i] = (role, [*system_parts, TextPart("\n\n"), *parts])
                break
        else:
            raise ModelError(
                f"{style.source}: {style.family.title} has no system role and the request has no user turn "
                f"to carry the system text (task {request.rid.task!r})."
            )
    return turns


def build_conversation(
    request: Request,
    style: PromptStyle,
    processor: Any,
    text_of: Callable[[int, str], str] | None = None,
    audio_block: Callable[[int], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Chat messages for `processor.apply_chat_template`.

    `text_of(i, text)` may replace the i-th text part (the probe uses markers); `audio_block(j)` gives the
    content block of the j-th clip (default `{"type": "audio"}`; Voxtral passes the audio itself)."""
    text_of = text_of or (lambda _i, text: text)
    audio_block = audio_block or (lambda _j: {"type": "audio"})
    inline = style.placement == "inline"
    placeholder = style.family.inline_placeholder(processor) if inline else ""
    conversation: list[dict[str, Any]] = []
    n_text = n_audio = 0
    for role, parts in _merged_messages(request, style):
        has_audio = any(isinstance(p, AudioPart) for p in parts)
        if inline or not has_audio:
            pieces = []
            for part in parts:
                if isinstance(part, TextPart):
                    pieces.append(text_of(n_text, part.text) if part.text else "")
                    n_text += 1
                else:
                    pieces.append(placeholder)
                    n_audio += 1
            conversation.append({"role": role, "content": "".join(pieces)})
            continue
        content: list[dict[str, Any]] = []
        for part in parts:
            if isinstance(part, TextPart):
                if part.text:
                    content.append({"type": "text", "text": text_of(n_text, part.text)})
                n_text += 1
            else:
                content.append(audio_block(n_audio))
                n_audio += 1
        conversation.append({"role": role, "content": content})
    return conversation


def _expected_order(request: Request, style: PromptStyle) -> list[str]:
    order, n_text = [], 0
    for _role, parts in _merged_messages(request, style):
        for part in parts:
            if isinstance(part, TextPart):
                if part.text:
                    order.append(f"T{n_text}")
                n_text += 1
            else:
                order.append("A")
    return order


def _render(processor: Any, conversation: list[dict[str, Any]], style: PromptStyle) -> str:
    try:
        return processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    except Exception as err:  # a template error is a checkpoint problem: say which one
        raise ModelError(
            f"{style.source}: the chat template failed to render a request ({type(err).__name__}: {err}). "
            "Pass a working template with --model_args chat_template=/path/to/template.jinja."
        ) from err


def check_order(request: Request, style: PromptStyle, processor: Any) -> None:
    """Render with markers instead of text and compare the order of text and audio with the request's."""
    conversation = build_conversation(request, style, processor, text_of=lambda i, _t: _MARK.format(i))
    probe = _render(processor, conversation, style)
    token = re.escape(processor.audio_token)
    observed = [
        f"T{m.group(1)}" if m.group(1) is not None else "A" for m in re.finditer(f"{_MARK_RE}|{token}", probe)
    ]
    expected = _expected_order(request, style)
    if observed == expected:
        return
    n_clips = expected.count("A")
    if observed.count("A") != n_clips:
        problem = f"it renders {observed.count('A')} audio placeholder(s) for the request's {n_clips} clip(s)"
    else:
        problem = "it does not keep the request's text and audio in order"
    raise ModelError(
        f"{style.source}: the chat template cannot carry this request (task {request.rid.task!r}, "
        f"k={request.rid.shots}): {problem} (expected {' '.join(expected)}; rendered {' '.join(observed)}; "
        "T = text part, A = audio clip). Clips would be dropped or misplaced, so nothing was generated. "
        "Use --model_args audio_placement=inline, or chat_template=/path/to/template.jinja that renders "
        '{"type": "audio"} content blocks where they stand.'
    )


def render_prompt(request: Request, style: PromptStyle, processor: Any) -> str:
    """The prompt text for one request, checked: order of parts, and one placeholder per clip."""
    check_order(request, style, processor)
    prompt = _render(processor, build_conversation(request, style, processor), style)
    count = prompt.count(processor.audio_token)
    n_clips = len(request.clips)
    if count != n_clips:
        raise ModelError(
            f"{style.source}: request for task {request.rid.task!r} (k={request.rid.shots}) has {n_clips} audio "
            f"clip(s) but its prompt holds {count} audio placeholder(s) {processor.audio_token!r}; the text of "
            "the request most likely contains that token. Remove it from the task's templates: clips are "
            "placed with {{ audio(clip) }} only."
        )
    return prompt
