"""Means, standard errors and bootstrap CIs behave as a statistician expects."""

from __future__ import annotations

import numpy as np

from audioeval.results.stats import Aggregation, summarize, summarize_group


def test_mean_stderr_and_ci_for_binary_scores():
    scores = {"acc": np.array([1.0] * 60 + [0.0] * 40)}
    s = summarize(scores, Aggregation.from_spec("acc", "mean"), 10_000, seed=1)
    assert s.value == 0.6 and s.n == 100
    assert abs(s.stderr - np.sqrt(0.6 * 0.4 / 99)) < 1e-9
    # the percentile bootstrap CI of a proportion is close to the normal interval
    assert abs(s.ci95[0] - (0.6 - 1.96 * s.stderr)) < 0.02 and abs(s.ci95[1] - (0.6 + 1.96 * s.stderr)) < 0.02


def test_bootstrap_is_seeded_and_resample_count_configurable():
    scores = {"acc": np.random.default_rng(0).random(50)}
    agg = Aggregation.from_spec("acc", "mean")
    assert summarize(scores, agg, 2000, seed=5).ci95 == summarize(scores, agg, 2000, seed=5).ci95
    assert summarize(scores, agg, 2000, seed=5).ci95 != summarize(scores, agg, 2000, seed=6).ci95
    unmeasured = summarize(scores, agg, 0, seed=5)
    assert not unmeasured.has_ci and all(np.isnan(unmeasured.ci95))  # no bootstrap: no CI, never [v, v]
    assert unmeasured.stderr > 0  # the analytic standard error of a mean still stands


def test_missing_values_are_excluded_and_counted():
    scores = {"acc": np.array([1.0, np.nan, 0.0, 1.0])}
    s = summarize(scores, Aggregation.from_spec("acc", "mean"), 100, seed=0)
    assert s.n == 3 and s.missing == 1 and abs(s.value - 2 / 3) < 1e-12


def test_ratio_aggregation_is_corpus_level():
    # corpus WER = total errors / total reference words, not the mean of per-utterance WERs
    scores = {"err": np.array([1.0, 0.0, 3.0]), "words": np.array([2.0, 10.0, 3.0])}
    agg = Aggregation.from_spec("wer", {"ratio": ["err", "words"]})
    s = summarize(scores, agg, 1000, seed=0)
    assert abs(s.value - 4 / 15) < 1e-12
    assert s.ci95[0] <= s.value <= s.ci95[1] and s.stderr > 0


def test_group_is_mean_of_subtask_means_with_ci_from_within_subtask_resampling():
    rng = np.random.default_rng(3)
    a = summarize(
        {"acc": (rng.random(200) < 0.9).astype(float)}, Aggregation.from_spec("acc", "mean"), 5000, 1
    )
    b = summarize(
        {"acc": (rng.random(20) < 0.1).astype(float)}, Aggregation.from_spec("acc", "mean"), 5000, 2
    )
    g = summarize_group([a, b])
    assert abs(g.value - (a.value + b.value) / 2) < 1e-12  # not weighted by size
    assert g.ci95[0] < g.value < g.ci95[1]
    # the small subtask dominates the uncertainty: wider than the big one's CI, narrower than the small one's
    width = g.ci95[1] - g.ci95[0]
    assert (a.ci95[1] - a.ci95[0]) < width < (b.ci95[1] - b.ci95[0])


def test_nothing_measured_is_reported_as_not_measured():
    mean, ratio = Aggregation.from_spec("acc", "mean"), Aggregation.from_spec("wer", {"ratio": ["e", "w"]})
    one = summarize({"acc": np.array([1.0])}, mean, 1000, seed=0)
    assert one.value == 1.0 and np.isnan(one.stderr) and not one.has_ci
    no_boot = summarize({"e": np.array([1.0, 2.0]), "w": np.array([4.0, 4.0])}, ratio, 0, seed=0)
    assert no_boot.value == 3 / 8 and np.isnan(no_boot.stderr) and not no_boot.has_ci
    many = summarize({"acc": np.array([1.0, 0.0, 1.0])}, mean, 0, seed=0)
    group = summarize_group([many, summarize({"acc": np.array([0.0, 1.0])}, mean, 100, seed=0)])
    assert not group.has_ci  # one member without a bootstrap: the group has no CI either


def test_stratified_mean_weights_strata_not_samples():
    # stratum 0: four samples of 1.0; stratum 1: one sample of 0.0 -> equal weights give 0.5 (samples: 0.8)
    scores = {
        "x": np.array([1.0, 1.0, 1.0, 1.0, 0.0, np.nan]),
        "stratum": np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0]),
        "weight": np.ones(6),
    }
    agg = Aggregation.from_spec("x", {"stratified_mean": ["stratum", "weight"]})
    s = summarize(scores, agg, 1000, seed=0)
    assert s.value == 0.5 and s.n == 5 and s.missing == 1
    assert s.ci95 == [0.5, 1.0]  # a stratum of one sample is not certain: resamples without it move the mean
    # its stderr borrows the pooled variance within the other strata
    varying = {"x": np.array([0.0, 1.0, 0.0, 1.0, 1.0]), "stratum": np.array([0.0] * 4 + [1.0])}
    s = summarize(dict(varying, weight=np.ones(5)), agg, 0, seed=0)
    assert s.value == 0.75 and abs(s.stderr - np.sqrt((1 / 3) / 4 + (1 / 3) / 1) / 2) < 1e-12
    weighted = dict(scores, weight=np.array([3.0] * 4 + [1.0] * 2))
    assert summarize(weighted, agg, 0, seed=0).value == 0.75  # (3 * 1 + 1 * 0) / 4


def test_stratified_mean_ci_and_stderr_reflect_each_stratum():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.random(300), rng.random(30) * 4])
    stratum = np.array([0.0] * 300 + [1.0] * 30)
    agg = Aggregation.from_spec("x", {"stratified_mean": ["stratum", "weight"]})
    s = summarize({"x": x, "stratum": stratum, "weight": np.ones(330)}, agg, 4000, seed=2)
    assert abs(s.value - (x[:300].mean() + x[300:].mean()) / 2) < 1e-12
    expected = np.sqrt(x[:300].var(ddof=1) / 300 + x[300:].var(ddof=1) / 30) / 2
    assert abs(s.stderr - expected) < 1e-12
    assert abs((s.ci95[1] - s.ci95[0]) / (2 * 1.96) - expected) < 0.1 * expected
    assert summarize({"x": x, "stratum": stratum, "weight": np.ones(330)}, agg, 4000, seed=2).ci95 == s.ci95
