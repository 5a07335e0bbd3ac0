"""What the template bounds cost: microseconds per prompt rendered in the bounded sandbox against Jinja's plain
immutable sandbox, for the toy task's two layouts (per-message templates and one whole-prompt template) at k=5,
and for a loop-heavy template (1,000 iterations writing a number each), the worst case for per-step checks.

    python bench/template_bounds.py [--repeats 2000]

Prints one line per template: plain us, bounded us, ratio. Both sandboxes render the same episode, and the
outputs are checked to be equal before timing. Times are this process's CPU time (a shared machine's other
jobs stretch wall time, not CPU time), in alternating rounds; each figure is the fastest round.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy"
LOOP = "{{ audio(query.clips[0]) }}{% for i in range(1000) %}{{ i }},{% endfor %}"


def episode(shots: int) -> dict:
    from audioeval.types import AudioClip

    def clip(label: str) -> dict:
        return {"role": "x", "label": label, "audio": AudioClip.from_array(np.zeros(160), 16000)}

    demos = [{"clips": [clip(label)], "label": label} for label in ["low", "high"] * (shots // 2 + 1)][:shots]
    return {"id": "e0", "index": 0, "context": [], "demos": demos, "query": {"clips": [clip("high")]}}


def renderer(task_yaml: Path, plain: bool):
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from audioeval.config import templates
    from audioeval.config.task import load_task_config

    original = (templates.make_environment, templates.render_bounded)
    if plain:
        templates.make_environment = lambda dirs: ImmutableSandboxedEnvironment(  # type: ignore[assignment]
            loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        templates.render_bounded = lambda template, context: template.render(**context)  # type: ignore[assignment]
    try:
        made = templates.PromptRenderer(load_task_config(task_yaml).with_params({}, "bench"))
    finally:
        templates.make_environment, templates.render_bounded = original
    if plain:  # the renderer looks render_bounded up at render time: keep it plain for this one
        made._render = lambda role, context: made.templates[role].render(**context)  # type: ignore[method-assign]
    return made


def shape(messages) -> list:
    """Roles, texts and which clip sits where: what two renders must agree on."""
    return [(m.role, [getattr(p, "text", None) or id(p.clip) for p in m.parts]) for m in messages]


def per_render_us(made, ep: dict, k: int, repeats: int) -> float:
    started = time.process_time()
    for _ in range(repeats):
        made.render(ep, k)
    return (time.process_time() - started) / repeats * 1e6


def fastest_us(plain, bounded, ep: dict, k: int, repeats: int, rounds: int = 9) -> tuple[float, float]:
    """Microseconds per render of each in its fastest round, timed in alternating rounds."""
    plain.render(ep, k), bounded.render(ep, k)
    times = [
        (per_render_us(plain, ep, k, repeats), per_render_us(bounded, ep, k, repeats)) for _ in range(rounds)
    ]
    return min(t[0] for t in times), min(t[1] for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    loop_dir = Path(tempfile.mkdtemp(prefix="template-bounds-"))
    (loop_dir / "q.jinja").write_text(LOOP)
    (loop_dir / "t.yaml").write_text(
        "task: t\nbuilder: ./b.py\ntemplates: {query: q.jinja}\ntarget: 'x'\nmetrics: [m]\n"
    )
    cases = [
        ("toy per-message templates, k=5", TOY / "toy_tones.yaml", 5, args.repeats),
        ("toy whole-prompt template, k=5", TOY / "toy_tones_chat.yaml", 5, args.repeats),
        ("1,000-iteration loop", loop_dir / "t.yaml", 0, max(args.repeats // 20, 20)),
    ]
    for name, yaml_path, k, repeats in cases:
        ep = episode(k)
        plain, bounded = renderer(yaml_path, plain=True), renderer(yaml_path, plain=False)
        assert shape(plain.render(ep, k)) == shape(bounded.render(ep, k)), name
        plain_us, bounded_us = fastest_us(plain, bounded, ep, k, max(repeats // 9, 5))
        print(
            f"{name:34s} plain {plain_us:8.1f} us  bounded {bounded_us:8.1f} us  x{bounded_us / plain_us:.2f}"
        )
    shutil.rmtree(loop_dir)


if __name__ == "__main__":
    main()
