"""One unit for scores wherever they are shown: a proportion (accuracy, a rate: every value and CI bound in
[0, 1]) in percent, with its stderr and CI in percentage points, in the terminal table, summary.md, the
robustness table and the viewer's results table, as the benchmark reports show it; a 0-10 judge score in its
own unit. results.json keeps fractions."""

from __future__ import annotations

from types import SimpleNamespace

from audioeval.results.blocks import ShotBlock
from audioeval.results.compact_table import compact_table
from audioeval.results.outputs import markdown_table
from audioeval.results.robustness import markdown as robustness_markdown
from audioeval.viewer.overview import results_rows

RAW = {
    "task_a": {
        "0-shot": {"accuracy": 0.125, "accuracy_stderr": 0.02, "accuracy_ci95": [0.1, 0.15], "n": 40},
        "1-shot": {"accuracy": 1.0, "accuracy_stderr": 0.0, "accuracy_ci95": [1.0, 1.0], "n": 40},
    },
    "task_b": {"0-shot": {"score": 7.25, "score_stderr": 0.5, "score_ci95": [6.5, 8.0], "n": 40}},
    # a 0-10 score whose mean happens to fall below 1 at one k is still not a proportion at the other
    "task_c": {
        "0-shot": {"score": 0.5, "score_ci95": [0.0, 1.5], "n": 4},
        "1-shot": {"score": 2.0, "score_ci95": [1.0, 3.0], "n": 4},
    },
}
RESULTS = {task: {k: ShotBlock.from_json(block) for k, block in per_k.items()} for task, per_k in RAW.items()}


def test_the_terminal_table_shows_proportions_in_percent_and_says_so():
    table = compact_table(RESULTS, {})
    assert "| task_a | accuracy | 12.5% [10.0, 15.0] | 100.0% [100.0, 100.0] | 40 |" in table
    assert "| task_b | score | 7.250 [6.500, 8.000] |" in table
    assert "| task_c | score | 0.500 [0.000, 1.500] | 2.000 [1.000, 3.000] | 4 |" in table
    assert "proportions (accuracy, rates) in %, their stderr and CI in percentage points" in table


def test_the_full_table_too():
    table = markdown_table(RESULTS, {})
    assert "| task_a | 0 | accuracy | 12.5% | 2.0 | [10.0, 15.0] | 40 | 0 |" in table
    assert "| task_b | 0 | score | 7.250 | 0.500 | [6.500, 8.000] | 40 | 0 |" in table
    assert "proportions (accuracy, rates) in %" in table


def test_the_robustness_table_gives_a_proportion_and_its_drop_in_percent_and_points():
    rows = [
        {"task": "t", "k": 0, "metric": "accuracy", "condition": "clean", "value": 0.8, "ci95": [0.7, 0.9],
         "n": 50, "lower_is_better": False},
        {"task": "t", "k": 0, "metric": "accuracy", "condition": "noise_snr=0", "value": 0.5, "ci95": [0.4, 0.6],
         "drop": 0.3, "drop_ci95": [0.2, 0.4], "relative_drop": 0.375, "relative_drop_ci95": [0.25, 0.5],
         "n": 50, "lower_is_better": False},
    ]  # fmt: skip
    table = robustness_markdown(rows)
    assert "| t | 0 | accuracy | clean | 80.0% | [70.0, 90.0] | — |  | — |  | 50 |" in table
    assert (
        "| noise_snr=0 | 50.0% | [40.0, 60.0] | 30.0 pp | [20.0, 40.0] | 37.5% | [25.0, 50.0] | 50 |" in table
    )


def test_the_viewer_results_table_marks_and_scales_proportions():
    record = SimpleNamespace(sections=SimpleNamespace(results=RESULTS, groups={}))
    rows = {(r["name"], r["k"], r["metric"]): r for r in results_rows(record)}
    accuracy = rows[("task_a", 0, "accuracy")]
    assert accuracy["percent"] and accuracy["value"] == 12.5 and accuracy["ci"] == [10.0, 15.0]
    assert accuracy["stderr"] == 2.0
    score = rows[("task_b", 0, "score")]
    assert not score["percent"] and score["value"] == 7.25
