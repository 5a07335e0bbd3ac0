"""`knn-icl`: an in-context learner without language. Each clip becomes a fixed-length embedding (log-mel /
MFCC statistics, or a local CLAP checkpoint's audio embedding); the query is predicted from the episode's
demonstrations only — nearest neighbour for categorical labels, ridge regression over the demo labels for
numeric ones (rounded to an integer). Labelled context clips whose label is a possible answer (the Morse A-Z
bank for MorseLetter) are examples too, at every k. With no examples at all (k=0 and no such context) it draws
from the task's label space."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from audioeval.audio.features import clip_features
from audioeval.config.fields import Arg
from audioeval.errors import ModelError
from audioeval.models.baselines.demo_majority import DemoMajorityModel
from audioeval.models.baselines.examples import examples_of
from audioeval.types import AudioClip, Request, Response


def _is_integer(label: str) -> bool:
    try:
        int(label)
        return True
    except ValueError:
        return False


def _standardize(train: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    stacked = np.vstack([train, query[None, :]])
    mean, std = stacked.mean(axis=0), stacked.std(axis=0)
    std[std < 1e-9] = 1.0
    return (train - mean) / std, (query - mean) / std


def nearest_label(train: np.ndarray, labels: list[str], query: np.ndarray) -> str:
    x, q = _standardize(train, query)
    distances = np.linalg.norm(x - q[None, :], axis=1)
    return labels[int(np.argmin(distances))]


def ridge_predict(train: np.ndarray, values: np.ndarray, query: np.ndarray, alpha: float = 1.0) -> float:
    """Ridge regression in the dual form (few examples, many features); intercept = the demo mean."""
    x, q = _standardize(train, query)
    centred = values - values.mean()
    gram = x @ x.T
    weights = np.linalg.solve(gram + alpha * len(values) * np.eye(len(values)), centred)
    return float(values.mean() + (q @ x.T) @ weights)


class ClapEmbedder:
    """Audio embeddings from a local CLAP checkpoint (transformers ClapModel), on the CPU."""

    def __init__(self, path: str) -> None:
        if not Path(path).is_dir():
            raise ModelError(
                f"--model_args clap={path}: not a folder with a CLAP checkpoint (config.json + weights)."
            )
        try:
            from transformers import ClapFeatureExtractor, ClapModel
        except ImportError as err:
            raise ModelError("knn-icl with clap= needs transformers: pip install 'audioeval[hf]'.") from err
        self.extractor = ClapFeatureExtractor.from_pretrained(path)
        self.model = ClapModel.from_pretrained(path).eval()

    def __call__(self, clip: AudioClip) -> np.ndarray:
        import torch
        from scipy.signal import resample_poly

        rate = self.extractor.sampling_rate
        samples = clip.samples
        if clip.sampling_rate != rate:
            g = np.gcd(clip.sampling_rate, rate)
            samples = resample_poly(samples, rate // g, clip.sampling_rate // g)
        # crop here, deterministically: the extractor would crop long clips at a random offset
        samples = samples[: int(self.extractor.nb_max_samples)]
        inputs = self.extractor([samples.astype(np.float32)], sampling_rate=rate, return_tensors="pt")
        with torch.no_grad():
            embedding = self.model.get_audio_features(**inputs)
        if not isinstance(embedding, torch.Tensor):  # newer transformers return a model output
            embedding = embedding.pooler_output
        return embedding[0].float().numpy()


class KnnIclModel(DemoMajorityModel):
    name = "knn-icl"

    def __init__(
        self,
        clap: Annotated[
            str | None,
            Arg("a local CLAP checkpoint whose audio embedding replaces the MFCC statistics", min_length=1),
        ] = None,
        ridge_alpha: Annotated[float, Arg("ridge regression strength for numeric labels", ge=0)] = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.clap_path = clap
        self.ridge_alpha = float(ridge_alpha)
        self.embed = ClapEmbedder(clap) if clap else (lambda c: clip_features(c.samples, c.sampling_rate))

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "seed": self.seed,
            "embedding": self.clap_path or "mfcc-stats-v1",
            "examples": "demos+answer-context",  # labelled context clips whose label is an answer count too
            "ridge_alpha": self.ridge_alpha,
        }

    def generate(self, requests: list[Request]) -> list[Response]:
        out = []
        for request in requests:
            start = time.perf_counter()
            view = examples_of(request, self.name) if request.shown is not None or request.rid.shots else None
            examples = view.examples + view.context_examples if view is not None else []
            if view is None or not examples:
                answer = self._pick(request, list(request.choices or ()))
            else:
                train = np.stack([self.embed(e.clip) for e in examples])
                query = self.embed(view.target)
                labels = [e.label for e in examples]
                if all(_is_integer(label) for label in labels) and len(set(labels)) > 1:
                    values = np.array([int(label) for label in labels], dtype=np.float64)
                    answer = str(int(round(ridge_predict(train, values, query, self.ridge_alpha))))
                else:
                    answer = nearest_label(train, labels, query)
            out.append(Response(text=answer, latency_s=time.perf_counter() - start))
        return out
