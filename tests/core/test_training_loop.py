"""The worked example of docs/python_api.md: a torch model trained in a loop that calls `audioeval.evaluate`
every few steps, on the weights it holds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "training_loop.py"


def _example():
    spec = importlib.util.spec_from_file_location("training_loop_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_loop_evaluates_the_weights_it_holds_and_they_improve():
    example = _example()
    curve = example.train(steps=40, every=20, limit=12)
    assert [step for step, _ in curve] == [0, 20, 40]
    assert curve[-1][1] == 1.0 and curve[-1][1] >= curve[0][1]
    assert curve == example.train(steps=40, every=20, limit=12)  # same weights, same results
