"""Statistics for comparing two runs on the same episodes (`audioeval compare`): resampling by cluster, the
exact McNemar test, a paired sign-flip permutation test, Holm's correction, and the unpaired fallbacks.

Every resampling works on clusters of pairs (episodes that share their data, or one episode each) through
sufficient statistics (`Aggregation.sufficient`): a draw is a weighting of the clusters, so one matrix product
gives the aggregate of every resample at once, for every run compared."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def bootstrap_counts(rng: np.random.Generator, n_clusters: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_clusters): how often each cluster is drawn in each resample (n_clusters draws with
    replacement), as float64 weights."""
    flat = rng.integers(0, n_clusters, size=(n_draws, n_clusters))
    flat += np.arange(n_draws)[:, None] * n_clusters  # each draw's counts in a row of its own
    counts = np.bincount(flat.ravel(), minlength=n_draws * n_clusters).reshape(n_draws, n_clusters)
    return counts.astype(np.float64)


def swap_masks(rng: np.random.Generator, n_clusters: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_clusters) of 0/1: which clusters swap the two runs' answers in each permutation (under
    the null hypothesis the runs are exchangeable within every pair, so a whole cluster's signs flip)."""
    return rng.integers(0, 2, size=(n_draws, n_clusters)).astype(np.float64)


@dataclass(frozen=True)
class McNemar:
    p_value: float
    base_only: int  # pairs the baseline got right and the other run wrong
    other_only: int  # the reverse


def is_binary(*columns: np.ndarray) -> bool:
    """Whether every value is 0 or 1 (right/wrong scores, the case of McNemar's test)."""
    return all(bool(np.isin(c, (0.0, 1.0)).all()) for c in columns)


def mcnemar_exact(base: np.ndarray, other: np.ndarray) -> McNemar:
    """Exact McNemar test on paired 0/1 scores: a two-sided binomial test of the discordant pairs against
    1/2 (scipy.stats.binomtest); p = 1 when no pair is discordant."""
    from scipy.stats import binomtest

    base_only = int(np.sum((base == 1) & (other == 0)))
    other_only = int(np.sum((base == 0) & (other == 1)))
    discordant = base_only + other_only
    p = 1.0 if discordant == 0 else float(binomtest(other_only, discordant, 0.5).pvalue)
    return McNemar(p, base_only, other_only)


def permutation_pvalue(observed: float, permuted: np.ndarray) -> float:
    """Two-sided Monte Carlo p-value of a paired permutation test: the share of permutations whose
    difference is at least as far from 0 as the observed one, counting the observed arrangement itself
    ((1 + hits) / (1 + draws), never 0)."""
    finite = permuted[np.isfinite(permuted)]
    if math.isnan(observed) or not len(finite):
        return math.nan
    tolerance = 1e-12 * max(1.0, abs(observed))
    hits = int(np.sum(np.abs(finite) >= abs(observed) - tolerance))
    return (1 + hits) / (1 + len(finite))


def normal_difference(
    base: float, base_stderr: float, other: float, other_stderr: float
) -> tuple[float, list[float], float]:
    """Unpaired, from two reported values and standard errors alone (runs without sample logs): the
    difference, its 95% CI and two-sided p-value under a normal approximation."""
    from scipy.stats import norm

    difference = other - base
    se = math.sqrt(base_stderr**2 + other_stderr**2)
    if not se or math.isnan(se):
        return difference, [math.nan, math.nan], math.nan
    return (
        difference,
        [difference - 1.959963984540054 * se, difference + 1.959963984540054 * se],
        float(2 * norm.sf(abs(difference) / se)),
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN entries are not tests and stay NaN):
    the i-th smallest of m becomes max over j <= i of min(1, (m - j + 1) p_(j))."""
    values = np.asarray(p_values, dtype=np.float64)
    tested = np.flatnonzero(~np.isnan(values))
    out = np.full(len(values), np.nan)
    if len(tested):
        order = tested[np.argsort(values[tested], kind="stable")]
        m = len(order)
        scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
        out[order] = np.maximum.accumulate(scaled)
    return [float(v) for v in out]
