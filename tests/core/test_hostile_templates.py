"""A template cannot exhaust memory or time: every growing operation is refused before it allocates, with a
ConfigError naming the template file and line and saying what the template tried; templates inside the bounds
render exactly as plain Jinja renders them."""

from __future__ import annotations

import re
import shutil
import threading
import tracemalloc
from pathlib import Path

import jinja2
import numpy as np
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from audioeval.config import template_bounds, templates
from audioeval.config.judge_roles import load_roles
from audioeval.config.task import load_task_config
from audioeval.config.template_bounds import render_bounded
from audioeval.config.templates import PromptRenderer, make_environment
from audioeval.errors import ConfigError
from audioeval.types import AudioClip
from tests.conftest import TOY, run_cli_subprocess


def _episode() -> dict:
    clip = {"role": "x", "label": "high", "audio": AudioClip.from_array(np.zeros(160), 16000)}
    return {"id": "e0", "index": 0, "context": [], "demos": [], "query": {"clips": [clip], "label": "high"}}


def _renderer(tmp_path: Path, query: str) -> PromptRenderer:
    (tmp_path / "q.jinja").write_text("{{ audio(query.clips[0]) }}\n" + query)
    (tmp_path / "t.yaml").write_text(
        "task: t\nbuilder: ./b.py\ntemplates: {query: q.jinja}\ntarget: '{{ query.label }}'\nmetrics: [m]\n"
    )
    return PromptRenderer(load_task_config(tmp_path / "t.yaml"))


def _text(renderer: PromptRenderer) -> str:
    (message,) = renderer.render(_episode(), 0)
    return "".join(getattr(p, "text", "") for p in message.parts).strip()


@pytest.mark.slow
def test_the_issue_template_ends_quickly_with_one_clear_line(tmp_path):
    """`{{ '%s' % 'x' * 1000000000 }}` from a task folder given with --include_path: exit 2 and one line that
    names the template file and line and what it tried (it used to run until killed, exhausting memory)."""
    task_dir = tmp_path / "hostile_task"
    shutil.copytree(TOY, task_dir)
    (task_dir / "query.jinja").write_text("{{ audio(query.clips[0]) }}\n{{ '%s' % 'x' * 1000000000 }}\n")
    proc = run_cli_subprocess(
        [
            "--tasks",
            "toy_tones",
            "--include_path",
            str(task_dir),
            "--limit",
            "2",
            "--no_cache",
            "--no_progress",
        ],
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1, proc.stderr
    assert f"{task_dir / 'query.jinja'}:2" in error_lines[0]
    assert "`'x' * 1000000000` would make a string of 1,000,000,000 characters" in error_lines[0]


PAST_THE_BOUNDS = {
    "str * int": ("{{ 'x' * 1000000000 }}", "1,000,000,000 characters"),
    "int * str": ("{{ 1000000000 * 'ab' }}", "2,000,000,000 characters"),
    "list * int": ("{{ [0] * 1000000 }}", "1,000,000 items"),
    "str % width": ("{{ '%1000000000s' % 'x' }}", "characters"),
    "str % star width": ("{{ '%*d' % (1000000000, 1) }}", "characters"),
    "int ** int": ("{{ 3 ** 1000000 }}", "bits"),
    "int * int": ("{% set a = 2 ** 40000 %}{{ a * a }}", "bits"),
    "str + str": ("{% set s = 'x' * 600000 %}{{ s + s }}", "1,200,000 characters"),
    "list + list": ("{% set l = [0] * 60000 %}{{ (l + l)|length }}", "120,000 items"),
    # `~` is compiled without a hook: its result is refused where it goes, here written out
    "tilde": ("{% set s = 'x' * 600000 %}{{ s ~ s }}", "writing out 'xxxxxxxxxxxx...' would make 1,200,000"),
    "str.center": ("{{ 'x'.center(1000000000) }}", "str.center()"),
    "str.ljust": ("{{ 'x'.ljust(1000000000) }}", "str.ljust()"),
    "str.zfill": ("{{ '1'.zfill(1000000000) }}", "str.zfill()"),
    "str.replace": ("{{ ('x' * 1000).replace('x', 'y' * 10000) }}", "str.replace()"),
    "str.join": ("{% set s = 'x' * 600000 %}{{ '-'.join([s, s]) }}", "str.join()"),
    "str.format width": ("{{ '{:>1000000000}'.format('x') }}", "str.format"),
    "str.format nested width": ("{{ '{:{w}}'.format('x', w=1000000000) }}", "str.format"),
    "str.format_map": ("{{ '{a:>1000000000}'.format_map({'a': 1}) }}", "str.format"),
    "str.expandtabs": ("{{ ('\\t' * 1000).expandtabs(100000) }}", "str.expandtabs()"),
    "join filter": ("{% set s = 'x' * 600000 %}{{ [s, s]|join }}", "join"),
    # 100,000 references to one long string hold 10^10 characters as `==`, sort and join walk them
    "join of references": ("{% set s = 'x' * 100000 %}{{ ([s] * 100000)|join }}", "would hold"),
    "center filter": ("{{ 'x'|center(1000000000) }}", "center("),
    "indent filter": ("{{ ('a\\n' * 400000)|indent(100) }}", "indent("),
    "wordwrap filter": ("{{ 'a b c'|wordwrap(1, wrapstring='x' * 500000) }}", "wordwrap("),
    "replace filter": ("{{ ('x' * 1000)|replace('x', 'y' * 10000) }}", "the replace filter"),
    "format filter": ("{{ '%1000000000s'|format('x') }}", "the format filter"),
    "batch filter": ("{{ [1]|batch(1000000000, fill_with=0)|list }}", "batch("),
    "slice filter": ("{{ []|slice(1000000000)|list }}", "slice("),
    "sum filter": ("{{ ([[1] * 100000] * 10)|sum(start=[])|length }}", "items"),
    "list filter": ("{{ ('x' * 1000000)|list|length }}", "the list filter"),
    "tojson filter": ("{{ ('x' * 1000000)|tojson }}", "the tojson filter"),
    "tojson indent": ("{{ [[[[[[[[1]]]]]]]]|tojson(indent=1000000) }}", "the tojson filter"),
    "tojson deep indent": (
        "{% set ns = namespace(v=[1]) %}{% for i in range(400) %}{% set ns.v = [ns.v] %}{% endfor %}"
        "{{ ns.v|tojson(indent=16) }}",
        "the tojson filter",
    ),
    "range": ("{{ range(1000000000)|length }}", "range(1000000000)"),
    "writing a huge structure": ("{% set s = 'x' * 100000 %}{{ [s] * 100 }}", "writing out a list"),
    "a block set": (
        "{% set s = 'x' * 600000 %}{% set b %}{{ s }}{{ s }}{% endset %}{{ b|length }}",
        "the text of a block or macro",
    ),
    "nested loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "loop",
    ),
    "branching recursion": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        "calls",
    ),
    "many creations": (
        "{% set ns = namespace(l=[]) %}{% for i in range(20000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
        "in all",
    ),
}


@pytest.mark.parametrize("name", list(PAST_THE_BOUNDS))
def test_each_growing_operation_is_refused_with_file_and_line(tmp_path, monkeypatch, name):
    # fewer steps than the real 1,000,000 keep the loop cases quick and ahead of the time limit
    monkeypatch.setattr(template_bounds, "MAX_STEPS", 10_000)
    source, what = PAST_THE_BOUNDS[name]
    renderer = _renderer(tmp_path, source)
    with pytest.raises(ConfigError) as caught:
        renderer.render(_episode(), 0)
    message = str(caught.value)
    assert f"{tmp_path / 'q.jinja'}:2:" in message
    assert "rendering bound" in message
    assert what in message


def test_lipsum_is_gone(tmp_path):
    with pytest.raises(ConfigError, match=r"q\.jinja:2.*'lipsum' is undefined"):
        _renderer(tmp_path, "{{ lipsum(1000000000) }}").render(_episode(), 0)


def test_the_output_bound_names_the_line_that_passed_it(tmp_path):
    renderer = _renderer(tmp_path, "{% set s = 'x' * 400000 %}\n{{ s }}\n{{ s }}\n{{ s }}\n")
    with pytest.raises(ConfigError, match=r"q\.jinja:5: .*passed 1,000,000 characters"):
        renderer.render(_episode(), 0)


def test_the_time_limit_holds_outside_the_main_thread(tmp_path, monkeypatch):
    """Judging renders off the main thread, where signal alarms cannot fire: the limit is checked by the
    template's own operations instead."""
    monkeypatch.setattr(template_bounds, "TIME_LIMIT_S", 0.0)
    renderer = _renderer(tmp_path, "{% for i in range(10) %}{{ i }}{% endfor %}")
    errors: list[BaseException] = []

    def render() -> None:
        try:
            renderer.render(_episode(), 0)
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            errors.append(err)

    worker = threading.Thread(target=render)
    worker.start()
    worker.join(timeout=60)
    assert len(errors) == 1 and isinstance(errors[0], ConfigError)
    assert "rendering took longer than 0 s" in str(errors[0])


def test_each_render_gets_its_own_budget(tmp_path):
    """600,000 loop iterations per render is fine, again and again: the step bound is per render, not per
    renderer, so a long run never trips it."""
    renderer = _renderer(
        tmp_path, "{% for i in range(1000) %}{% for j in range(600) %}{% endfor %}{% endfor %}ok"
    )
    for _ in range(3):
        assert _text(renderer) == "ok"


WITHIN_THE_BOUNDS = {
    "{{ 'ab' * 3 }}": "ababab",
    "{{ 3 * 'ab' }}": "ababab",
    "{{ ([1, 2] * 2)|join(',') }}": "1,2,1,2",
    "{{ '%05d|%-4s|%.2f' % (42, 'x', 3.14159) }}": "00042|x   |3.14",
    "{{ '%(a)s-%(b)s' % {'a': 1, 'b': 2} }}": "1-2",
    "{{ '{:>6}|{:^5}|{:.3f}'.format('x', 'y', 2.5) }}": "     x|  y  |2.500",
    "{{ '{a}{b}'.format_map({'a': 1, 'b': 2}) }}": "12",
    "{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7 + 8 }}": "1024 0.5 15",
    "{{ 'a' ~ 1 ~ [2] }}": "a1[2]",
    "{{ 'x'.center(5, '*') }}{{ '7'.zfill(3) }}": "**x**007",
    "{{ 'a-b'.replace('-', '+') }}{{ 'a-b'|replace('-', '=') }}": "a+ba=b",
    "{{ 'a\nb'|indent(2, first=True) }}": "  a\n  b",
    "{{ 'aaa bbb'|wordwrap(3) }}": "aaa\nbbb",
    "{{ [1, 2, 3]|batch(2)|list }}": "[[1, 2], [3]]",
    "{{ [[1], [2]]|sum(start=[]) }}": "[1, 2]",
    "{{ range(3)|list }}": "[0, 1, 2]",
    "{{ '%s'|format('z') }}": "z",
    "{% for x in 'ab' %}{{ loop.index }}/{{ loop.length }}{% endfor %}": "1/22/2",
    "{% set b %}{{ 'x' * 3 }}{% endset %}{{ b }}": "xxx",
    "{{ {'k': 'v'}|tojson }}": '{"k": "v"}',
    "{{ {'k': [1]}|tojson(indent=2) }}": '{\n  "k": [\n    1\n  ]\n}',
    "{{ ', '.join(['a', 'b']) }}": "a, b",
}


@pytest.mark.parametrize("source", list(WITHIN_THE_BOUNDS))
def test_templates_within_the_bounds_render_as_plain_jinja(tmp_path, source):
    assert _text(_renderer(tmp_path, "<" + source + ">")) == "<" + WITHIN_THE_BOUNDS[source] + ">"


def test_nothing_large_is_allocated_before_a_refusal(tmp_path, monkeypatch):
    """Sizes are predicted: a template asking for a gigabyte is refused before it is made, not after."""
    monkeypatch.setattr(template_bounds, "MAX_STEPS", 10_000)
    for name, (source, _) in PAST_THE_BOUNDS.items():
        renderer = _renderer(tmp_path, source)
        tracemalloc.start()
        try:
            with pytest.raises(ConfigError):
                renderer.render(_episode(), 0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 64 * 2**20, f"{name}: {peak / 2**20:.0f} MiB allocated before the refusal"


def _finishes(renderer: PromptRenderer) -> BaseException | None:
    """Render in a worker thread; fail, rather than hang the suite, if the render never returns."""
    outcome: list[BaseException | None] = []

    def render() -> None:
        try:
            renderer.render(_episode(), 0)
            outcome.append(None)
        except BaseException as err:  # noqa: BLE001 - handed to the test
            outcome.append(err)

    worker = threading.Thread(target=render, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert outcome, "the render did not return"
    return outcome[0]


X_Y = "{% set x = [0] * 99999 %}{% set y = [0] * 99999 %}"
# Values that hold far more than they take in memory, through shared parts; `==`, `in` and sort walk every part.
SHARED_PARTS = {
    "== on repeated lists": (X_Y + "{{ ([x] * 99999) == ([y] * 99999) }}", "would hold"),
    "in on repeated lists": (X_Y + "{{ [y] in ([x] * 99999) }}", "would hold"),
    "sort of repeated lists": ("{{ ([[0] * 99999] * 99999)|sort|length }}", "would hold"),
    "doubling by {% set %}": (
        "{% set a = [0] %}{% set b = [0] %}"
        + "{% set a = [a, a] %}{% set b = [b, b] %}" * 40
        + "{{ a == b }}",
        "the value of a {% set %}",
    ),
    "doubling in a namespace": (
        "{% set ns = namespace(a=[0], b=[0]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}"
        "{% set ns.b = [ns.b, ns.b] %}{% endfor %}{{ ns.a == ns.b }}",
        "the value of a {% set %}",
    ),
    "doubling through macro arguments": (
        "{% macro f(x, y, n) %}{% if n %}{{ f([x, x], [y, y], n - 1) }}{% else %}{{ x == y }}{% endif %}"
        "{% endmacro %}{{ f([0], [0], 60) }}",
        "an argument of f",
    ),
    "doubling through namespace()": (
        "{% set a = namespace(v=[0]) %}{% set b = namespace(v=[0]) %}"
        + "{% set a = namespace(v=[a.v, a.v]) %}{% set b = namespace(v=[b.v, b.v]) %}" * 40
        + "{{ a.v == b.v }}",
        "an argument of Namespace",
    ),
    "doubling through a recursive loop": (
        "{% for x in [[0]] recursive %}{% if loop.depth < 70 %}{{ loop([[x, x]]) }}{% else %}{{ x == x }}"
        "{% endif %}{% endfor %}",
        "an argument of loop",
    ),
    "multiplying through loop variables": (
        "{% set a, b = [0], [0] %}"
        + "{% for a, b in [([a, a, a, a, a, a, a, a], [b, b, b, b, b, b, b, b])] %}" * 12
        + "{{ a == b }}"
        + "{% endfor %}" * 12,
        "the iterable of a loop",
    ),
    "text of a large value": (
        "{% set s = 'x' * 100000 %}{{ ([s] * 100)|string|length }}",
        "the string filter",
    ),
    "sum of many lists": ("{{ ([[0]] * 90000)|sum(start=[])|length }}", "in all"),
}


@pytest.mark.parametrize("name", list(SHARED_PARTS))
def test_comparisons_and_sorts_are_bounded_too(tmp_path, name):
    """`{{ ([x]*99999) == ([y]*99999) }}` used to run for ever: == and `in` have no hook, so what they may walk
    is bounded where values are made and named."""
    source, what = SHARED_PARTS[name]
    err = _finishes(_renderer(tmp_path, source))
    assert isinstance(err, ConfigError), err
    assert f"{tmp_path / 'q.jinja'}:2:" in str(err) and "rendering bound" in str(err) and what in str(err)


def test_the_largest_values_allowed_compare_and_sort(tmp_path):
    renderer = _renderer(
        tmp_path,
        X_Y + "{{ x == y }} {{ 1 in x }} {{ x|sort|length }} {{ x|unique|list }} {{ x|string|length }}",
    )
    assert _finishes(renderer) is None
    assert _text(renderer) == "True False 99999 [0] 299997"


@pytest.mark.parametrize(
    "source, error",
    [
        ("{{ lipsum(1000000000) }}", "'lipsum' is undefined"),
        ("{{ [1, 2]|random }}", "No filter named 'random'"),  # a prompt must not change between runs
        ("{{ '<b>'|striptags }}", "No filter named 'striptags'"),
        ("{{ 'x'.encode() }}", "'encode' of 'str' object is unsafe"),
        ("{{ (10 ** 100).to_bytes(1000000000) }}", "'to_bytes' of 'int' object is unsafe"),
    ],
)
def test_what_is_left_out_says_so(tmp_path, source, error):
    with pytest.raises(ConfigError, match=r"q\.jinja:2.*" + re.escape(error)):
        _renderer(tmp_path, source).render(_episode(), 0)


PLAIN_CONTEXT = {
    "items": [3, 1, 2],
    "words": ["a", "b", "c"],
    "d": {"b": 2, "a": 1},
    "s": "the quick brown fox jumps",
    "people": [{"name": "ann", "age": 40}, {"name": "bo", "age": 25}, {"name": "cy", "age": 40}],
    "tree": [{"name": "r", "children": [{"name": "c1", "children": []}, {"name": "c2", "children": []}]}],
}
PLAIN_SOURCES = [
    *WITHIN_THE_BOUNDS,
    "{% for x in items %}{{ loop.index }}{{ loop.revindex }}{{ loop.last }}/{{ loop.length }};{% endfor %}",
    "{% for x in items if x > 1 %}{{ x }}{% else %}none{% endfor %}{% for x in [] %}{% else %}empty{% endfor %}",
    "{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
    "{% for x in tree recursive %}{{ x.name }}{% if x.children %}({{ loop(x.children) }}){% endif %}{% endfor %}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = (a, b) %}{{ c }}{% set e = {'k': [a, b]} %}{{ e }}",
    "{% set ns = namespace(n=0) %}{% for x in items %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
    "{% with a = items|length, b = [1, 2] %}{{ a }}{{ b }}{% endwith %}",
    "{% macro m(x, y=2) %}{{ x }}-{{ y }}{% endmacro %}{% macro w() %}[{{ caller() }}]{% endmacro %}{{ m(1) }}"
    "{{ m(1, y=[3]) }}{% call w() %}inner {{ m(4) }}{% endcall %}",
    "{{ items|sort(reverse=true)|join(',') }} {{ items|unique|list }} {{ items|max }} {{ d|items|list }}",
    "{{ items|map('string')|join('') }} {{ words|select('ne', 'b')|list }} "
    "{{ people|selectattr('age', 'gt', 30)|map(attribute='name')|join }} {{ people|groupby('age')|list }}",
    "{{ s.split()|length }} {{ s.upper() }} {{ s|title }} {{ s|truncate(9) }} {{ s|wordcount }} {{ ' x '|trim }}",
    "{{ items == [3, 1, 2] }} {{ 2 in items }} {{ 'fox' in s }} {{ items < [4] }} {{ d == {'a': 1, 'b': 2} }} "
    "{{ 9 is divisibleby 3 }} {{ s is string }} {{ 2 is in items }} {{ items|first }}{{ items|last }}",
    "{{ '%s/%d' % ('a', 3) }} {{ '{}-{}'.format(1, 2) }} {{ range(1, 10, 3)|list }} {{ range(3)|length }}",
    "{% set c = cycler('a', 'b') %}{% for i in range(3) %}{{ c.next() }}{% endfor %}{{ d.get('a') }}"
    "{{ d.items()|list }}{{ d.keys()|list }}",
    "{% set t %}{{ s }}!{% endset %}{{ t }} {{ -3|abs }} {{ 3.7|round }} {{ '5'|int + 1 }} {{ 1000|filesizeformat }}",
    "{% set ns = namespace(l=[]) %}{% for i in range(5) %}{% set ns.l = ns.l + [i] * 2 %}{% endfor %}{{ ns.l }}",
]


@pytest.mark.parametrize("source", PLAIN_SOURCES)
def test_templates_within_the_bounds_render_exactly_as_plain_jinja(source):
    plain = ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    bounded = make_environment([])
    expected = plain.from_string(source).render(**PLAIN_CONTEXT)
    assert render_bounded(bounded.from_string(source), PLAIN_CONTEXT) == expected


@pytest.mark.parametrize(
    "task", ["toy_tones.yaml", "toy_tones_chat.yaml"], ids=["per-message templates", "whole-prompt template"]
)
def test_shipped_templates_render_as_plain_jinja(task, monkeypatch):
    """What the bench times (bench/template_bounds.py): the bounded sandbox changes no prompt."""
    episode = {"id": "e0", "index": 0, "context": [], "demos": [], "query": _episode()["query"]}
    episode["demos"] = [{"clips": _episode()["query"]["clips"], "label": label} for label in ("low", "high")]
    bounded = [
        (m.role, m.text)
        for m in PromptRenderer(load_task_config(TOY / task).with_params({}, "t")).render(episode, 2)
    ]
    monkeypatch.setattr(
        templates,
        "make_environment",
        lambda dirs: ImmutableSandboxedEnvironment(
            loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        ),
    )
    monkeypatch.setattr(templates, "render_bounded", lambda template, context: template.render(**context))
    plain = PromptRenderer(load_task_config(TOY / task).with_params({}, "t")).render(episode, 2)
    assert bounded == [(m.role, m.text) for m in plain]


def test_a_template_nested_past_pythons_limit_is_one_clear_line(tmp_path):
    with pytest.raises(
        ConfigError, match=r"q\.jinja: templates\.query of task 't' cannot be compiled .*nest fewer"
    ):
        _renderer(tmp_path, "{% for i in [1] %}" * 25 + "x" + "{% endfor %}" * 25)


def test_a_judge_template_with_a_syntax_error_is_one_clear_line(tmp_path):
    shutil.copytree(TOY, tmp_path / "toy")
    (tmp_path / "toy" / "judge" / "agrees.jinja").write_text('{{ turn("system") }}\n{% if %}\n')
    config = load_task_config(tmp_path / "toy" / "toy_tones_judged.yaml")
    with pytest.raises(
        ConfigError, match=r"agrees\.jinja:2: template syntax error in judge role 'agrees' of task"
    ):
        load_roles(config)
