"""Aggregation and uncertainty: per-task means with standard errors and bootstrap 95% CIs over episodes,
and group means of subtask means with a CI from resampling within each subtask."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
_CHUNK = 1000
_CHUNK_CELLS = 1_000_000  # resampled indices held at once, so memory does not grow with the sample count


def stable_seed(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


@dataclass(frozen=True)
class Aggregation:
    """`mean` of one per-sample score, or `ratio` = sum(numerator) / sum(denominator) (e.g. corpus WER)."""

    kind: str
    inputs: tuple[str, ...]

    @classmethod
    def from_spec(cls, name: str, spec: Any) -> Aggregation:
        if spec is None or spec == "mean":
            return cls("mean", (name,))
        return cls("ratio", tuple(spec["ratio"]))

    def valid_mask(self, scores: dict[str, np.ndarray]) -> np.ndarray:
        mask = np.ones(len(scores[self.inputs[0]]), dtype=bool)
        for key in self.inputs:
            mask &= ~np.isnan(scores[key])
        return mask

    def value(self, scores: dict[str, np.ndarray]) -> float:
        cols = [scores[k] for k in self.inputs]
        if self.kind == "mean":
            return float(cols[0].mean()) if len(cols[0]) else float("nan")
        den = cols[1].sum()
        return float(cols[0].sum() / den) if den else float("nan")

    def resampled(
        self, scores: dict[str, np.ndarray], n_resamples: int, rng: np.random.Generator
    ) -> np.ndarray:
        """The aggregate over `n_resamples` bootstrap resamples (with replacement) of the samples."""
        cols = [scores[k] for k in self.inputs]
        n = len(cols[0])
        out = np.empty(n_resamples, dtype=np.float64)
        chunk = max(1, min(_CHUNK, _CHUNK_CELLS // max(1, n)))  # the draws do not depend on the chunking
        for start in range(0, n_resamples, chunk):
            stop = min(start + chunk, n_resamples)
            idx = rng.integers(0, n, size=(stop - start, n))
            if self.kind == "mean":
                out[start:stop] = cols[0][idx].mean(axis=1)
            else:
                den = cols[1][idx].sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[start:stop] = np.where(
                        den > 0, cols[0][idx].sum(axis=1) / np.where(den > 0, den, 1), np.nan
                    )
        return out


def percentile_ci(distribution: np.ndarray) -> list[float]:
    finite = distribution[np.isfinite(distribution)]
    if not len(finite):
        return [float("nan"), float("nan")]
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return [float(lo), float(hi)]


@dataclass
class MetricSummary:
    value: float
    stderr: float
    ci95: list[float]
    n: int
    missing: int
    distribution: np.ndarray | None  # bootstrap distribution, kept for group CIs


def summarize(
    scores: dict[str, np.ndarray],
    agg: Aggregation,
    n_resamples: int,
    seed: int,
    keep_distribution: bool = True,
) -> MetricSummary:
    mask = agg.valid_mask(scores)
    valid = {k: scores[k][mask] for k in agg.inputs}
    n, missing = int(mask.sum()), int((~mask).sum())
    if n == 0:
        return MetricSummary(float("nan"), float("nan"), [float("nan"), float("nan")], 0, missing, None)
    value = agg.value(valid)
    dist = None
    if n_resamples > 0 and n > 1:
        dist = agg.resampled(valid, n_resamples, np.random.default_rng(seed))
        ci = percentile_ci(dist)
    else:
        ci = [value, value]
    if agg.kind == "mean":
        stderr = float(valid[agg.inputs[0]].std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    else:
        stderr = float(np.nanstd(dist, ddof=1)) if dist is not None else 0.0
    return MetricSummary(value, stderr, ci, n, missing, dist if keep_distribution else None)


def summarize_group(members: list[MetricSummary]) -> MetricSummary:
    """Unweighted mean of member values; CI from the mean of the members' independent bootstrap draws."""
    values = np.array([m.value for m in members], dtype=np.float64)
    value = float(values.mean())
    stderr = float(np.sqrt(np.sum(np.array([m.stderr for m in members]) ** 2)) / len(members))
    dists = [m.distribution for m in members]
    if all(d is not None for d in dists):
        dist = np.mean(np.stack(dists), axis=0)
        ci = percentile_ci(dist)
    else:
        dist, ci = None, [value, value]
    return MetricSummary(
        value, stderr, ci, int(sum(m.n for m in members)), int(sum(m.missing for m in members)), dist
    )
