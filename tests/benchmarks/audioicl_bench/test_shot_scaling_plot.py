"""The shot-scaling plot's fixed layout: whatever the number of tasks, no text is cut off at the figure's edge
and no two texts overlap (what tight_layout used to guarantee by measuring)."""

from __future__ import annotations

import pytest

from audioeval.benchmarks.audioicl_bench.report import plot

NAMES = [
    ("AudioCount", "AC"),
    ("AudioCountHard", "ACH"),
    ("AudioOperatorHard", "AOH"),
    ("AudioRemap", "AR"),
    ("AnomalyDetect", "AD"),
    ("AudioLengthHard", "ALH"),
    ("MorseCode", "MC"),
    ("MorseLetter", "ML"),
    ("AudioOperator", "AO"),
    ("AudioLength", "AL"),
]


def _record(i: int) -> dict:
    name, short = NAMES[i % len(NAMES)]
    per_k = {
        k: {"accuracy": 0.3 + 0.1 * k / 5, "ci95": [0.1, 0.9], "shortcut": 0.95 if k else 0.05}
        for k in (0, 1, 3, 5)
    }
    return {"name": name, "short": short, "chance": 0.125, "per_k": per_k}


def _text_boxes(fig):
    renderer = fig.canvas.get_renderer()
    boxes = []
    for text in fig.findobj(lambda a: a.__class__.__name__ == "Text"):
        if text.get_visible() and text.get_text().strip():
            boxes.append((text.get_text(), text.get_window_extent(renderer)))
    return boxes


@pytest.mark.parametrize("n", [1, 2, 3, 5, 9, 10])
def test_no_text_is_cut_off_or_overlaps(tmp_path, monkeypatch, n):
    from matplotlib.figure import Figure

    figures = []
    real_savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    path = plot([_record(i) for i in range(n)], tmp_path / "plot.png")
    assert path.stat().st_size > 10_000
    (fig,) = figures
    frame = fig.bbox
    boxes = _text_boxes(fig)
    assert len(boxes) > 10 * n  # titles, axis labels, tick labels, legend, suptitle
    for label, box in boxes:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, label
    for i, (a_label, a) in enumerate(boxes):
        for b_label, b in boxes[i + 1 :]:
            assert not a.overlaps(b), f"{a_label!r} overlaps {b_label!r}"
