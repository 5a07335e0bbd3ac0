"""Templates cannot escape the sandbox: the classic Jinja escapes stay blocked, and a template sees clips as
opaque read-only handles, so numpy's side-effecting methods (tofile, dump, put, ...) are out of reach."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audioeval.config.task import load_task_config
from audioeval.config.templates import ClipHandle, PromptRenderer
from audioeval.errors import ConfigError
from audioeval.types import AudioClip, AudioPart


def _episode() -> dict:
    def clip(label: str) -> dict:
        return {"role": "x", "label": label, "audio": AudioClip.from_array(np.zeros(1600), 16000)}

    return {
        "id": "e0",
        "index": 0,
        "context": [],
        "demos": [{"clips": [clip("low")], "label": "low"}],
        "query": {"clips": [clip("high")], "label": "high"},
        "metadata": {"freq": np.float64(440.0), "bins": np.arange(3)},
    }


def _renderer(tmp_path: Path, query: str) -> PromptRenderer:
    (tmp_path / "q.jinja").write_text(query)
    (tmp_path / "t.yaml").write_text(
        "task: t\nbuilder: ./b.py\ntemplates: {query: q.jinja}\ntarget: '{{ query.label }}'\nmetrics: [m]\n"
    )
    return PromptRenderer(load_task_config(tmp_path / "t.yaml"))


CLASSIC_ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ lipsum.__globals__['os'].popen('id').read() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{% include '/etc/passwd' %}",
    "{% include '../../../../../../../../etc/passwd' %}",
    "{{ self._TemplateReference__context.environment }}",
    "{{ '{0.__class__.__mro__}'.format('') }}",
    "{{ audio.__self__.__class__.__init__.__globals__ }}",
]


@pytest.mark.parametrize("escape", CLASSIC_ESCAPES)
def test_classic_jinja_escapes_are_blocked(tmp_path, escape):
    renderer = _renderer(tmp_path, "{{ audio(query.clips[0]) }} " + escape)
    with pytest.raises(ConfigError, match=r"q\.jinja"):
        renderer.render(_episode(), 0)


NUMPY_AND_MUTATION = [
    "{{ query.clips[0].audio.samples.tofile(out) }}",
    "{{ query.clips[0].audio.samples.dump(out) }}",
    "{{ query.clips[0].audio.samples.put(0, 1.0) }}",
    "{{ query.clips[0].audio.samples.ctypes.data }}",
    "{{ query.clips[0].audio.samples.fill(0) }}",
    "{{ query.clips[0].audio.samples.setflags(write=True) }}",
    "{{ query.clips[0].audio.__dict__ }}",
    "{{ episode.update({'label': 'x'}) }}",
    "{{ demos.pop() }}",
    "{{ query.clips.append(query.clips[0]) }}",
    "{{ metadata.bins.append(1) }}",
]


@pytest.mark.parametrize("attempt", NUMPY_AND_MUTATION)
def test_templates_reach_no_array_and_change_nothing(tmp_path, attempt):
    out = tmp_path / "pwned.py"
    renderer = _renderer(tmp_path, "{% set out = '" + str(out) + "' %}{{ audio(query.clips[0]) }} " + attempt)
    episode = _episode()
    before = episode["query"]["clips"][0]["audio"].samples.copy()
    with pytest.raises(ConfigError, match=r"q\.jinja"):
        renderer.render(episode, 0)
    assert not out.exists()
    assert np.array_equal(episode["query"]["clips"][0]["audio"].samples, before)
    assert len(episode["demos"]) == 1 and episode["query"]["label"] == "high"


def test_templates_see_clip_facts_and_plain_values(tmp_path):
    renderer = _renderer(
        tmp_path,
        "{{ audio(query.clips[0]) }} {{ query.clips[0].audio.seconds }} {{ query.clips[0].audio.sampling_rate }} "
        "{{ query.clips[0].label }} {{ metadata.freq }} {{ metadata.bins | sum }} {{ query.clips[0].audio }}",
    )
    (message,) = renderer.render(_episode(), 0)
    assert isinstance(message.parts[0], AudioPart)
    assert message.text.strip() == "0.1 16000 high 440.0 3 <audio 0.10 s>"


def test_handles_are_read_only_facts():
    handle = ClipHandle(1.0, 16000)
    with pytest.raises(AttributeError):
        handle.seconds = 2.0  # type: ignore[misc]
    assert not any(hasattr(handle, name) for name in ("samples", "tofile", "clip"))
