"""The statistics of `audioeval compare` against hand-computed and scipy values: exact McNemar, Holm, the cluster
bootstrap counts, the aggregations' sufficient sums, the sign-flip permutation test against exhaustive
enumeration, the unpaired normal approximation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binomtest, norm

from audioeval.results.compare.cells import resample, scope_of, task_cell
from audioeval.results.compare.runs import AtK
from audioeval.results.paired_stats import (
    bootstrap_counts,
    holm,
    is_binary,
    mcnemar_exact,
    normal_difference,
    permutation_pvalue,
    swap_masks,
)
from audioeval.results.stats import Aggregation


def test_mcnemar_is_the_two_sided_binomial_test_of_the_discordant_pairs():
    base = np.array([1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1], dtype=float)
    other = np.array([0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1], dtype=float)
    result = mcnemar_exact(base, other)
    assert (result.base_only, result.other_only) == (5, 1)
    assert result.p_value == pytest.approx(binomtest(1, 6, 0.5).pvalue)
    assert result.p_value == pytest.approx(2 * (1 + 6) / 2**6)  # by hand: 2 P(X <= 1), X ~ Bin(6, 1/2)
    assert mcnemar_exact(base, base).p_value == 1.0  # no discordant pair
    assert mcnemar_exact(np.ones(5), np.zeros(5)).p_value == pytest.approx(2 / 2**5)


def test_holm_steps_down_and_keeps_the_order():
    adjusted = holm([0.01, 0.04, 0.03, 0.005, math.nan])
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4x, 3x, 2x, 1x -> 0.02, 0.03, 0.06, max(0.04, 0.06)
    assert adjusted[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(adjusted[4])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([]) == []


def test_bootstrap_counts_are_draws_with_replacement():
    counts = bootstrap_counts(np.random.default_rng(7), 13, 500)
    assert counts.shape == (500, 13) and (counts.sum(axis=1) == 13).all()
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 13, size=(500, 13))  # the same stream, as indices
    assert (counts == np.stack([np.bincount(row, minlength=13) for row in idx])).all()
    masks = swap_masks(np.random.default_rng(1), 10_000, 4)
    assert set(np.unique(masks)) == {0.0, 1.0} and abs(masks.mean() - 0.5) < 0.01


@pytest.mark.parametrize("kind", ["mean", "ratio", "stratified"])
def test_sufficient_sums_give_the_aggregate_of_any_resample(kind):
    rng = np.random.default_rng(0)
    n = 40
    scores = {
        "x": rng.random(n),
        "d": rng.integers(1, 5, n).astype(float),
        "s": rng.integers(0, 3, n).astype(float),
    }
    scores["w"] = np.array([1.0, 2.0, 5.0])[scores["s"].astype(int)]
    agg = Aggregation(kind, {"mean": ("x",), "ratio": ("x", "d"), "stratified": ("x", "s", "w")}[kind])
    sums, combine = agg.sufficient(scores, np.arange(n), n)
    assert combine(sums.sum(axis=0)) == pytest.approx(agg.value(scores))
    drawn = agg.resampled(scores, 50, np.random.default_rng(3))
    idx = np.random.default_rng(3).integers(0, n, size=(50, n))
    weights = np.stack([np.bincount(row, minlength=n) for row in idx]).astype(float)
    assert combine(weights @ sums) == pytest.approx(drawn)


def _at(values: list[float]) -> AtK:
    return AtK(
        np.arange(len(values)), {"x": np.array(values, dtype=float)}, np.zeros(len(values), dtype=bool)
    )


def test_the_paired_cluster_bootstrap_is_the_naive_one():
    """Episodes 2k and 2k+1 share a cluster: the cell's draws equal resampling clusters by hand."""
    rng = np.random.default_rng(5)
    base, other = rng.random(12).round(2), rng.random(12).round(2)
    scope = scope_of("t", list(range(12)), {e: f"c{e // 2}" for e in range(12)})
    cell = task_cell(_at(list(base)), _at(list(other)), Aggregation("mean", ("x",)), scope)
    resample([cell], 300, seed=4)
    from audioeval.results.compare.cells import stable_seed

    draws = np.random.default_rng(stable_seed(4, "compare", "t", "bootstrap")).integers(0, 6, size=(300, 6))
    members = [np.array([2 * c, 2 * c + 1]) for c in range(6)]
    naive = [
        np.mean(np.concatenate([other[members[c]] for c in row]))
        - np.mean(np.concatenate([base[members[c]] for c in row]))
        for row in draws
    ]
    assert cell.other_draws() - cell.base_draws() == pytest.approx(np.array(naive))
    assert cell.difference == pytest.approx(other.mean() - base.mean())
    assert cell.mcnemar is None  # not 0/1 scores


def test_the_sign_flip_p_value_matches_exhaustive_enumeration():
    base = [0.1, 0.4, 0.35, 0.8, 0.5, 0.2, 0.9, 0.3, 0.6, 0.45]
    other = [0.3, 0.5, 0.3, 0.9, 0.7, 0.25, 0.95, 0.5, 0.55, 0.65]
    scope = scope_of("t", list(range(10)), {})
    cell = task_cell(_at(base), _at(other), Aggregation("mean", ("x",)), scope)
    resample([cell], 20_000, seed=0)
    d = np.array(other) - np.array(base)
    observed = abs(d.mean())
    flips = [
        abs((np.array(signs) * d).mean()) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=10)
    ]
    exact = float(np.mean(flips))
    assert cell.p_value() == pytest.approx(exact, abs=0.01)


def test_zero_one_scores_of_single_episodes_use_mcnemar():
    base, other = [1, 0, 1, 1, 0, 1, 1, 1], [0, 0, 1, 0, 0, 0, 1, 0]
    cell = task_cell(_at(base), _at(other), Aggregation("mean", ("x",)), scope_of("t", list(range(8)), {}))
    assert cell.mcnemar is not None and cell.p_value() == pytest.approx(binomtest(0, 4, 0.5).pvalue)
    shared = scope_of("t", list(range(8)), {e: "same clip" for e in (0, 1)})
    clustered = task_cell(_at(base), _at(other), Aggregation("mean", ("x",)), shared)
    assert clustered.mcnemar is None  # pairs that share a clip are not independent: permutation instead


def test_p_value_helpers():
    assert permutation_pvalue(0.5, np.array([0.1, -0.6, 0.5, 0.2])) == pytest.approx((1 + 2) / 5)
    assert math.isnan(permutation_pvalue(math.nan, np.array([0.1])))
    assert is_binary(np.array([0.0, 1.0])) and not is_binary(np.array([0.5]))
    value, ci, p = normal_difference(0.5, 0.05, 0.6, 0.05)
    se = math.sqrt(2) * 0.05
    assert value == pytest.approx(0.1) and ci == pytest.approx([0.1 - 1.959964 * se, 0.1 + 1.959964 * se])
    assert p == pytest.approx(2 * norm.sf(0.1 / se))
