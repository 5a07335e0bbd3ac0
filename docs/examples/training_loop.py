"""Evaluate inside a training loop: a tiny torch model learns to tell high tones from low ones, and
`audioeval.evaluate` scores the weights it holds every few steps, in memory, with nothing written to disk.

    python docs/examples/training_loop.py        # from the repository root

The task is the toy benchmark of the test suite (tests/fixtures/toy), picked with `include_path`; with your own
task folder, or a shipped benchmark, only `TASKS` and `INCLUDE` change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

import audioeval

INCLUDE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "toy"
TASKS = ["toy_tones"]
RATE, BANDS = 16000, 16


def features(samples: np.ndarray) -> torch.Tensor:
    """Log energy in BANDS equal frequency bands: what the model hears of a clip."""
    spectrum = np.abs(np.fft.rfft(samples)) ** 2
    bands = np.array_split(spectrum, BANDS)
    return torch.tensor(np.log1p([band.sum() for band in bands]), dtype=torch.float32)


class ToneClassifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(BANDS, 2)  # logits for "low", "high"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class TorchModel(audioeval.Model):
    """The model contract around the module being trained: answer each request from its query clip."""

    name = "tone-classifier"
    labels = ("low", "high")

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        self.module = module

    def generate(self, requests: list[audioeval.Request]) -> list[audioeval.Response]:
        clips = [request.shown.query.clips[-1].samples for request in requests]
        with torch.no_grad():
            logits = self.module(torch.stack([features(c) for c in clips]))
        return [audioeval.Response(text=self.labels[int(i)]) for i in logits.argmax(dim=1)]


def training_batch(rng: np.random.Generator, size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Tones of random pitch with their label (1 = high), made afresh: the model never sees an eval clip."""
    labels = rng.integers(0, 2, size)
    t = np.arange(int(RATE * 0.25)) / RATE
    clips = [np.sin(2 * np.pi * rng.uniform(1500, 3000) * t) if y else np.sin(2 * np.pi * rng.uniform(100, 400) * t)
             for y in labels]  # fmt: skip
    return torch.stack([features(0.3 * c) for c in clips]), torch.tensor(labels)


def train(steps: int = 60, every: int = 20, limit: int = 12) -> list[tuple[int, float]]:
    """Train for `steps`, evaluating every `every` steps; the accuracy at k=0 after each evaluation."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    module = ToneClassifier()
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    model = TorchModel(module)
    curve = []
    for step in range(steps + 1):
        if step % every == 0:
            result = audioeval.evaluate(
                tasks=TASKS, model=model, include_path=INCLUDE, limit=limit, num_fewshot=[0],
                bootstrap_iters=0, no_progress=True,
            )  # fmt: skip
            curve.append((step, result.results[TASKS[0]]["0-shot"]["accuracy"].value))
        if step < steps:
            x, y = training_batch(rng)
            loss = torch.nn.functional.cross_entropy(module(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return curve


if __name__ == "__main__":
    for step, accuracy in train():
        print(f"step {step:3d}: accuracy {accuracy:.2f}")
