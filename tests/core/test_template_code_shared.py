"""Compiled template code is shared by the environments of one process (templates.SharedCode): a template
file used by several tasks is compiled once, and sharing never mixes up what each task's templates say."""

from __future__ import annotations

from pathlib import Path

import pytest

from audioeval.config import templates
from audioeval.config.template_bounds import BoundedSandbox
from audioeval.config.templates import SharedCode, compile_file, make_environment


@pytest.fixture
def compiles(monkeypatch) -> list[str | None]:
    """The file name of every template compiled from now on (the process's shared code starts empty)."""
    monkeypatch.setattr(templates, "_SHARED_CODE", SharedCode())
    seen: list[str | None] = []
    original = BoundedSandbox.compile

    def counting(self, source, name=None, filename=None, raw=False, defer_init=False):  # type: ignore[no-untyped-def]
        seen.append(filename)
        return original(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(BoundedSandbox, "compile", counting)
    return seen


def _folder(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text)
    return folder


def test_a_file_used_by_several_tasks_is_compiled_once(tmp_path, compiles):
    shared = _folder(tmp_path, "shared", {"prompt.jinja": "{{ greeting }}, {{ name }}!"})
    templates = [
        compile_file(make_environment([tmp_path / f"task{i}", shared]), shared / "prompt.jinja", "prompt")
        for i in range(9)
    ]
    assert compiles == [str(shared / "prompt.jinja")]
    assert {t.render(greeting="hi", name=str(i)) for i, t in enumerate(templates)} == {
        f"hi, {i}!" for i in range(9)
    }


def test_an_edited_file_is_compiled_again(tmp_path, compiles):
    folder = _folder(tmp_path, "task", {"prompt.jinja": "old {{ x }}"})
    path = folder / "prompt.jinja"
    assert compile_file(make_environment([folder]), path, "prompt").render(x=1) == "old 1"
    path.write_text("new {{ x }}")
    assert compile_file(make_environment([folder]), path, "prompt").render(x=1) == "new 1"
    assert len(compiles) == 2


def test_includes_of_the_same_name_stay_each_tasks_own(tmp_path, compiles):
    """`{% include "part.jinja" %}` resolves through each environment's own folders: a shared prompt file that
    includes a part each task writes differently renders each task's part, every time."""
    shared = _folder(tmp_path, "shared", {"prompt.jinja": '[{% include "part.jinja" %}]'})
    parts = {name: _folder(tmp_path, name, {"part.jinja": f"part of {name}"}) for name in ("a", "b")}
    for _ in range(2):
        for name, folder in parts.items():
            template = compile_file(make_environment([folder, shared]), shared / "prompt.jinja", "prompt")
            assert template.render() == f"[part of {name}]"
    assert sorted(f for f in compiles if f is not None) == sorted(
        [str(shared / "prompt.jinja"), str(parts["a"] / "part.jinja"), str(parts["b"] / "part.jinja")]
    )


def test_template_strings_are_shared_by_their_text(tmp_path, compiles):
    """A task's `target` is a template string: the same text is compiled once, different texts each their own."""
    from audioeval.config.task import load_task_config
    from audioeval.config.templates import PromptRenderer

    for target in ("{{ query.label }}", "{{ query.label|upper }}", "{{ query.label }}"):
        folder = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / "q.jinja").write_text("{{ audio(query.clips[0]) }}")
        (folder / "t.yaml").write_text(
            f"task: t\nbuilder: ./b.py\ntemplates: {{query: q.jinja}}\ntarget: '{target}'\nmetrics: [m]\n"
        )
        renderer = PromptRenderer(load_task_config(folder / "t.yaml"))
        expected = "LOW" if "upper" in target else "low"
        assert renderer.target_template.render(query={"label": "low"}) == expected
    assert compiles.count(None) == 2  # the two texts; the third is the first again
