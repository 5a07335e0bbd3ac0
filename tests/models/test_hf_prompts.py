"""Prompt construction: where each clip lands in the text, and the order and count checks."""

from __future__ import annotations

import pytest
from model_test_helpers import tone, user_request

from audioeval.errors import ModelError
from audioeval.models.hf.families import QWEN_OMNI_SYSTEM_PROMPT
from audioeval.models.hf.frontend import AudioChatFrontend

QWEN2_AUDIO_CLIP = "<|audio_bos|><|AUDIO|><|audio_eos|>"


def _icl_request():
    return user_request(
        "[Demo 1] ", tone(200), " Label: low\n[Query] ", tone(2000), " Label:", system="Answer."
    )


def test_template_placement_keeps_clips_where_the_request_puts_them(tiny_models):
    frontend = AudioChatFrontend.open(str(tiny_models["qwen2_audio"]))
    prompt = frontend.prompt(_icl_request())
    assert prompt == (
        "<|im_start|>system\nAnswer.<|im_end|>\n<|im_start|>user\n"
        f"[Demo 1] Audio 1: {QWEN2_AUDIO_CLIP}\n Label: low\n[Query] Audio 2: {QWEN2_AUDIO_CLIP}\n Label:"
        "<|im_end|>\n<|im_start|>assistant\n"
    )


def test_inline_placement_writes_the_audioicl_layout(tiny_models):
    frontend = AudioChatFrontend.open(str(tiny_models["qwen2_audio"]), audio_placement="inline")
    prompt = frontend.prompt(_icl_request())
    assert f"[Demo 1] {QWEN2_AUDIO_CLIP} Label: low\n[Query] {QWEN2_AUDIO_CLIP} Label:<|im_end|>" in prompt


def test_default_system_prompt_is_the_familys_and_can_be_replaced_or_dropped(tiny_models):
    request = user_request(tone(300), " Label:")
    omni = AudioChatFrontend.open(str(tiny_models["qwen2_5_omni"]))
    assert omni.prompt(request).startswith(f"<|im_start|>system\n{QWEN_OMNI_SYSTEM_PROMPT}<|im_end|>")
    own = AudioChatFrontend.open(str(tiny_models["qwen2_5_omni"]), system_prompt="Be brief.")
    assert own.prompt(request).startswith("<|im_start|>system\nBe brief.<|im_end|>")
    none = AudioChatFrontend.open(str(tiny_models["audio_flamingo3"]))  # no default: the template decides
    assert none.prompt(request).startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")


def test_multi_turn_demos_become_user_and_assistant_turns(tiny_models):
    from audioeval.types import AudioPart, Message, Request, RequestId, TextPart

    request = Request(
        messages=(
            Message("user", (AudioPart(tone(200)),)),
            Message("assistant", (TextPart("low"),)),
            Message("user", (AudioPart(tone(2000)),)),
        ),
        gen_kwargs={},
        rid=RequestId("t", 1, 0),
    )
    prompt = AudioChatFrontend.open(str(tiny_models["audio_flamingo3"])).prompt(request)
    assert prompt.endswith(
        "<|im_start|>user\n<sound><|im_end|>\n<|im_start|>assistant\nlow<|im_end|>\n"
        "<|im_start|>user\n<sound><|im_end|>\n<|im_start|>assistant\n"
    )


def _template(tmp_path, body: str) -> str:
    path = tmp_path / "template.jinja"
    path.write_text(
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m['content'] is string %}{{ m['content'] }}{% else %}" + body + "{% endif %}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n"
    )
    return str(path)


def test_template_that_drops_audio_is_refused(tiny_models, tmp_path):
    text_only = _template(
        tmp_path,
        "{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}",
    )
    frontend = AudioChatFrontend.open(str(tiny_models["qwen2_audio"]), chat_template=text_only)
    with pytest.raises(ModelError, match=r"renders 0 audio placeholder\(s\) for the request's 2 clip\(s\)"):
        frontend.prompt(_icl_request())


def test_template_that_moves_audio_is_refused_and_inline_placement_fixes_it(tiny_models, tmp_path):
    audio_first = _template(
        tmp_path,
        "{% for p in m['content'] if p['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>{% endfor %}"
        "{% for p in m['content'] if p['type'] == 'text' %}{{ p['text'] }}{% endfor %}",
    )
    frontend = AudioChatFrontend.open(str(tiny_models["qwen2_audio"]), chat_template=audio_first)
    with pytest.raises(ModelError, match="does not keep the request's text and audio in order"):
        frontend.prompt(_icl_request())
    inline = AudioChatFrontend.open(
        str(tiny_models["qwen2_audio"]), chat_template=audio_first, audio_placement="inline"
    )
    assert f"[Demo 1] {QWEN2_AUDIO_CLIP} Label: low" in inline.prompt(_icl_request())


def test_unknown_placement_is_an_error(tiny_models):
    with pytest.raises(ModelError, match="audio_placement='middle'"):
        AudioChatFrontend.open(str(tiny_models["qwen2_audio"]), audio_placement="middle")
