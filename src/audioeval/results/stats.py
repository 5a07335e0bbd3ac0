"""Aggregation and uncertainty: per-task means (plain, ratio or stratified) with standard errors and
bootstrap 95% CIs over episodes, and group means of subtask means with a CI from resampling within each
subtask."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 10_000
_CHUNK = 1000
_CHUNK_CELLS = 1_000_000  # resampled indices held at once, so memory does not grow with the sample count


@dataclass(frozen=True)
class Aggregation:
    """`mean` of one per-sample score; `ratio` = sum(numerator) / sum(denominator) (e.g. corpus WER); or
    `stratified`: the mean of each stratum (per-sample stratum ids), combined with the strata's weights
    (a per-sample column holding its stratum's weight), bootstrapped over samples. Inputs:
    (score,), (numerator, denominator) or (score, stratum, weight)."""

    kind: str
    inputs: tuple[str, ...]

    @classmethod
    def from_spec(cls, name: str, spec: Any) -> Aggregation:
        if spec is None or spec == "mean":
            return cls("mean", (name,))
        if "stratified_mean" in spec:
            return cls("stratified", (name, *spec["stratified_mean"]))
        return cls("ratio", tuple(spec["ratio"]))

    @property
    def helper_inputs(self) -> tuple[str, ...]:
        """Per-sample columns this aggregation reads that are not reported as metrics of their own."""
        return self.inputs if self.kind == "ratio" else self.inputs[1:]

    def valid_mask(self, scores: dict[str, np.ndarray]) -> np.ndarray:
        mask = np.ones(len(scores[self.inputs[0]]), dtype=bool)
        for key in self.inputs:
            mask &= ~np.isnan(scores[key])
        return mask

    def value(self, scores: dict[str, np.ndarray]) -> float:
        cols = [scores[k] for k in self.inputs]
        if self.kind == "mean":
            return float(cols[0].mean()) if len(cols[0]) else float("nan")
        if self.kind == "stratified":
            strata = _strata(cols[1], cols[2])
            if not strata:
                return float("nan")
            weights = np.array([w for _, w in strata])
            means = np.array([cols[0][members].mean() for members, _ in strata])
            return float(weights @ means / weights.sum())
        den = cols[1].sum()
        return float(cols[0].sum() / den) if den else float("nan")

    def resampled(
        self, scores: dict[str, np.ndarray], n_resamples: int, rng: np.random.Generator
    ) -> np.ndarray:
        """The aggregate over `n_resamples` bootstrap resamples (with replacement) of the samples."""
        cols = [scores[k] for k in self.inputs]
        if self.kind == "stratified":
            return _stratified_resamples(cols[0], _strata(cols[1], cols[2]), n_resamples, rng)
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

    def sufficient(
        self, scores: dict[str, np.ndarray], groups: np.ndarray, n_groups: int
    ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """The aggregation as a function of sums: per group of samples (a cluster), the sums its value depends
        on (an (n_groups, m) array), and `combine`, which turns sums over any weighting of the groups ((..., m))
        into the aggregate ((...)). `combine(sums.sum(axis=0))` is `value(scores)`; with bootstrap counts W
        (draws x groups), `combine(W @ sums)` is the aggregate of each resample, as `resampled` draws them."""
        cols = [scores[k] for k in self.inputs]
        if self.kind == "stratified":
            strata = _strata(cols[1], cols[2])
            code = np.empty(len(cols[0]), dtype=np.int64)
            for s_index, (members, _) in enumerate(strata):
                code[members] = s_index
            n_strata = len(strata)
            weights = np.array([w for _, w in strata])
            flat = groups * n_strata + code
            size = n_groups * n_strata
            sums = np.bincount(flat, weights=cols[0], minlength=size).reshape(n_groups, n_strata)
            counts = np.bincount(flat, minlength=size).reshape(n_groups, n_strata).astype(np.float64)
            return np.hstack([sums, counts]), partial(_combine_strata, weights=weights)
        parts = (cols[0], np.ones_like(cols[0])) if self.kind == "mean" else (cols[0], cols[1])
        sums = np.stack([np.bincount(groups, weights=p, minlength=n_groups) for p in parts], axis=1)
        return sums, _combine_ratio


def _combine_ratio(sums: np.ndarray) -> np.ndarray:
    """sum / count (a mean) or numerator / denominator (a ratio); NaN where the denominator is 0."""
    den = sums[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, sums[..., 0] / np.where(den > 0, den, 1), np.nan)


def _combine_strata(sums: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted mean of the strata means, the weights renormalised over the strata present."""
    n = len(weights)
    totals, counts = sums[..., :n], sums[..., n:]
    present = counts > 0
    means = np.divide(totals, counts, out=np.zeros_like(totals), where=present)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (means * weights).sum(axis=-1) / (present * weights).sum(axis=-1)


def _strata(stratum: np.ndarray, weight: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """(indices of its samples, its weight) per stratum, in stratum-id order."""
    out = []
    for sid in np.unique(stratum):
        members = np.flatnonzero(stratum == sid)
        out.append((members, float(weight[members].mean())))
    return out


def _stratified_resamples(
    values: np.ndarray, strata: list[tuple[np.ndarray, float]], n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Resample the samples (with replacement, like every other mean here) and recombine the strata means,
    weights renormalised over the strata a resample holds. Resampling within strata instead would give a
    stratum of one sample no uncertainty at all."""
    n, n_strata = len(values), len(strata)
    code = np.empty(n, dtype=np.int64)
    for s_index, (members, _) in enumerate(strata):
        code[members] = s_index
    weights = np.array([w for _, w in strata])
    out = np.empty(n_resamples, dtype=np.float64)
    chunk = max(1, min(_CHUNK, 4_000_000 // n))  # bounds the memory of one chunk's index arrays
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        rows = stop - start
        idx = rng.integers(0, n, size=(rows, n))
        flat = (np.arange(rows)[:, None] * n_strata + code[idx]).ravel()
        counts = np.bincount(flat, minlength=rows * n_strata).reshape(rows, n_strata)
        sums = np.bincount(flat, weights=values[idx].ravel(), minlength=rows * n_strata).reshape(
            rows, n_strata
        )
        present = counts > 0
        means = np.divide(sums, counts, out=np.zeros_like(sums), where=present)
        out[start:stop] = (means * weights).sum(axis=1) / (present * weights).sum(axis=1)
    return out


def _stratified_stderr(values: np.ndarray, stratum: np.ndarray, weight: np.ndarray) -> float:
    """Of the weighted strata means; a stratum of one sample borrows the pooled within-stratum variance
    (the variance of all samples when no stratum has two)."""
    strata = _strata(stratum, weight)
    weights = np.array([w for _, w in strata])
    sizes = np.array([len(m) for m, _ in strata])
    within = [values[m].var(ddof=1) if len(m) > 1 else np.nan for m, _ in strata]
    if (sizes > 1).any():
        pooled = float(np.nansum((sizes - 1) * np.array(within)) / (sizes[sizes > 1] - 1).sum())
    else:
        pooled = float(values.var(ddof=1)) if len(values) > 1 else 0.0
    variances = np.where(sizes > 1, np.nan_to_num(within), pooled) / sizes
    return float(np.sqrt(np.sum(weights**2 * variances)) / weights.sum())


def percentile_ci(distribution: np.ndarray) -> list[float]:
    finite = distribution[np.isfinite(distribution)]
    if not len(finite):
        return [float("nan"), float("nan")]
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return [float(lo), float(hi)]


NOT_MEASURED = [float("nan"), float("nan")]


@dataclass
class MetricSummary:
    """`stderr` and `ci95` are NaN when nothing measured them (one sample, no bootstrap, a ratio without
    bootstrap): reported as null and shown as "—", never as a zero-width interval."""

    value: float
    stderr: float
    ci95: list[float]
    n: int
    missing: int
    distribution: np.ndarray | None  # bootstrap distribution, kept for group CIs

    @property
    def has_ci(self) -> bool:
        return not any(np.isnan(self.ci95))


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
        return MetricSummary(float("nan"), float("nan"), list(NOT_MEASURED), 0, missing, None)
    value = agg.value(valid)
    dist = None
    ci = list(NOT_MEASURED)
    if n_resamples > 0 and n > 1:
        dist = agg.resampled(valid, n_resamples, np.random.default_rng(seed))
        ci = percentile_ci(dist)
    stderr = float("nan")
    if agg.kind == "mean" and n > 1:
        stderr = float(valid[agg.inputs[0]].std(ddof=1) / np.sqrt(n))
    elif agg.kind == "stratified" and n > 1:
        stderr = _stratified_stderr(*(valid[k] for k in agg.inputs))
    elif agg.kind == "ratio" and dist is not None:
        stderr = float(np.nanstd(dist, ddof=1))
    return MetricSummary(value, stderr, ci, n, missing, dist if keep_distribution else None)


def summarize_group(members: list[MetricSummary]) -> MetricSummary:
    """Unweighted mean of member values; CI from the mean of the members' independent bootstrap draws."""
    values = np.array([m.value for m in members], dtype=np.float64)
    value = float(values.mean())
    stderr = float(np.sqrt(np.sum(np.array([m.stderr for m in members]) ** 2)) / len(members))
    dists = [m.distribution for m in members]
    present = [d for d in dists if d is not None]
    if len(present) == len(dists):
        dist = np.mean(np.stack(present), axis=0)
        ci = percentile_ci(dist)
    else:
        dist, ci = None, list(NOT_MEASURED)
    return MetricSummary(
        value, stderr, ci, int(sum(m.n for m in members)), int(sum(m.missing for m in members)), dist
    )
