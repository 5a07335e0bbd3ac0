"""The dsp-oracle's vectorised paths give what the plain loops they replaced gave, number for number: the
operator search's votes (values, counts and their order, which breaks ties) and its budget, and the DTW
distance. The plain versions are kept here as the reference."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle import arithmetic
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.arithmetic import (
    DIGITS,
    OPERATORS,
    Unsolvable,
    solve,
)
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.count import (
    RADII_S,
    maxima,
    peak_scores,
    peak_scores_of_maxima,
)
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import dtw_distance
from audioeval.benchmarks.audioicl_bench.operator import evaluate


def reference_solve(demos, query, sounds, budget_total):
    """The depth-first search the oracle used before (one Python call per expression)."""
    budget = [budget_total]

    def value(assign, item, meaning):
        budget[0] -= 1
        if budget[0] < 0:
            raise Unsolvable("too many assignments explain the demos")
        clusters, ops = item
        return evaluate([assign[c] for c in clusters], [meaning[s] for s in ops])

    def extend(assign, clusters):
        free = [c for c in dict.fromkeys(clusters) if c not in assign]
        unused = [d for d in DIGITS if d not in assign.values()]
        for values in itertools.permutations(unused, len(free)):
            yield {**assign, **dict(zip(free, values, strict=True))}

    def run(meaning, votes, i=0, assign=None):
        assign = assign or {}
        if i == len(demos):
            for full in extend(assign, query[0]):
                votes[value(full, query, meaning)] += 1
            return
        item, label = demos[i]
        for full in extend(assign, item[0]):
            if value(full, item, meaning) == label:
                run(meaning, votes, i + 1, full)

    votes: Counter = Counter()
    for meaning in itertools.product(OPERATORS, repeat=sounds):
        mine: Counter = Counter()
        run(meaning, mine)
        votes.update(mine)
    return votes


def random_case(rng, sounds):
    """Demos and a query of an AudioOperator(Hard)-like episode, with the clusters a clustering might give:
    right, merged (two digits one cluster) or split."""
    n_ops = sounds
    true_meaning = [OPERATORS[int(rng.integers(3))] for _ in range(n_ops)]
    digit_cluster = {d: int(rng.integers(1, 6)) if rng.random() < 0.3 else d + 1 for d in range(10)}
    items = []
    for _ in range(int(rng.integers(2, 6))):
        digits = [int(rng.integers(1, 10)) for _ in range(n_ops + 1)]
        slots = tuple(int(s) for s in rng.permutation(n_ops))
        label = evaluate(digits, [true_meaning[s] for s in slots])
        items.append(((tuple(digit_cluster[d] for d in digits), slots), label))
    (query, _), demos = items[-1], items[:-1]
    if rng.random() < 0.2 and demos:
        demos[0] = (demos[0][0], demos[0][1] + 1)  # a label no assignment may explain
    return demos, query


@pytest.mark.parametrize("sounds", [1, 2])
def test_vectorised_search_votes_as_the_depth_first_search_did(sounds):
    rng = np.random.default_rng(sounds)
    outcomes = Counter()
    for _ in range(60):
        demos, query = random_case(rng, sounds)
        try:
            expected = reference_solve(demos, query, sounds, arithmetic.SEARCH_BUDGET)
        except Unsolvable:
            with pytest.raises(Unsolvable):
                solve(demos, query, sounds)
            outcomes["budget"] += 1
            continue
        got = solve(demos, query, sounds)
        assert list(got.items()) == list(expected.items())  # insertion order breaks most_common's ties
        assert got.most_common(1) == expected.most_common(1)
        outcomes["voted" if got else "no votes"] += 1
    assert outcomes["voted"] >= 10


def test_budget_runs_out_on_the_same_searches(monkeypatch):
    rng = np.random.default_rng(7)
    monkeypatch.setattr(arithmetic, "SEARCH_BUDGET", 400)
    ran_out = finished = 0
    for _ in range(60):
        demos, query = random_case(rng, 2)
        try:
            expected = reference_solve(demos, query, 2, 400)
        except Unsolvable:
            with pytest.raises(Unsolvable):
                solve(demos, query, 2)
            ran_out += 1
            continue
        assert list(solve(demos, query, 2).items()) == list(expected.items())
        finished += 1
    assert ran_out and finished


def reference_dtw(a, b):
    cost = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, n + 1):
        row, prev = acc[i], acc[i - 1]
        diag_up = np.minimum(prev[1:], prev[:-1]) + cost[i - 1]
        for j in range(1, m + 1):
            row[j] = min(diag_up[j - 1], row[j - 1] + cost[i - 1, j - 1])
    return float(acc[n, m] / (n + m))


def test_dtw_distance_is_the_row_by_row_recurrence_bit_for_bit():
    rng = np.random.default_rng(3)
    for n, m in [(1, 1), (1, 7), (9, 1), (23, 40), (57, 31), (64, 64)]:
        a, b = rng.standard_normal((n, 12)), rng.standard_normal((m, 12))
        assert dtw_distance(a, b) == reference_dtw(a, b)


def test_peaks_from_the_maxima_found_once_are_find_peaks_per_radius():
    rng = np.random.default_rng(5)
    for n in (0, 1, 50, 16000, 48000):
        score = np.convolve(rng.standard_normal(n), np.ones(40) / 40, mode="same") if n else np.zeros(0)
        score[rng.integers(0, max(n, 1), size=min(n, 30))] = 1.0 if n else 0.0  # ties and plateaus
        found = maxima(score)
        for radius in [0, 1, *(int(r * 16000) for r in RADII_S)]:
            expected = peak_scores(score, radius)
            got = peak_scores_of_maxima(score, found, radius)
            assert got.tolist() == expected.tolist()
