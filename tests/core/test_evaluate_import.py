"""`import evaluate` without what only its Evaluator classes import (transformers, scipy.stats: seconds of a
run's start-up): the masks are lifted afterwards, so those packages still import, and metrics load and compute."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
from audioeval.resources import metrics_dir
from audioeval.results.scoring import import_evaluate, load_metric
evaluate = import_evaluate()
assert "scipy.stats" not in sys.modules and "transformers" not in sys.modules, sorted(
    m for m in sys.modules if m.startswith(("scipy.stats", "transformers")))
metric = load_metric(metrics_dir() / "exact_match")
print(metric.compute(predictions=["a", "b"], references=["a", "c"]))
import scipy.stats
assert scipy.stats.norm.cdf(0) == 0.5
print("ok")
"""


@pytest.mark.slow
def test_evaluate_imports_without_scipy_stats_and_transformers_which_import_afterwards():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok"
