"""The tables of docs/*.md that list keys and arguments are what their declarations generate (config/fields.py):
a changed argument, bound or description cannot leave the docs behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from audioeval.models.doc_tables import markers, render, table

DOCS = sorted((Path(__file__).resolve().parents[2] / "docs").glob("*.md"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_generated_table_is_what_its_declarations_say(doc):
    text = doc.read_text(encoding="utf-8")
    if render(text) != text:
        drifted = [
            m for m in markers(text) if f"<!-- {m}:start -->\n{table(m)}\n<!-- {m}:end -->" not in text
        ]
        pytest.fail(
            f"{doc.name}: the tables {drifted} drifted from their declarations; rewrite them with "
            f"`python -m audioeval.models.doc_tables docs/{doc.name}`"
        )


def test_the_backends_the_docs_describe_have_generated_tables():
    found = {m for doc in DOCS for m in markers(doc.read_text(encoding="utf-8"))}
    expected = {"task-schema", "group-schema", "parameter-schema", "args:model:hf", "args:model:vllm"}
    expected |= {"args:model:openai", "args:model:realtime", "args:model:tts", "args:model:cascade"}
    expected |= {"args:asr:pocketsphinx", "args:asr:openai", "args:asr:hf"}
    assert expected <= found, f"missing generated tables: {sorted(expected - found)}"


def test_a_table_shows_each_argument_s_type_bounds_default_and_meaning():
    rows = {line.split(" | ")[0].strip("| `"): line for line in table("args:model:tts").splitlines()[2:]}
    assert (
        rows["speaking_rate"]
        == "| `speaking_rate` | int from 80 to 450 | 160 | words per minute (eSpeak NG's range) |"
    )
    assert rows["text_model"].startswith("| `text_model` | non-empty str | required |")
    openai = table("args:model:openai")
    assert "| `num_concurrent` | int ≥ 1 | 8 |" in openai and "| `timeout` | float > 0 | 120 |" in openai
    assert "| `family` | `auto`, `chat` or `reasoning` | `auto` |" in openai
    only = table("args:model:hf[audio_output,speaker]").splitlines()
    assert [r.split(" | ")[0] for r in only[2:]] == ["| `audio_output`", "| `speaker`"]
