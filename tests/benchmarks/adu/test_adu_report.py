"""The ADU-Bench numbers follow the paper's arithmetic (checked on its own Tables 2, 8, 9 and 11-22), a
judge's two orders are compared on the same items, and the report and plot say what was not scored."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from audioeval.benchmarks.adu.domains import DOMAINS, PAPER_DOMAIN_SIZES
from audioeval.benchmarks.adu.report import ItemScore, dataset_mean, summarise
from audioeval.benchmarks.adu.report_plot import NO_SCORE_LABEL, domain_figure
from audioeval.benchmarks.adu.report_text import markdown
from audioeval.registry import TaskRegistry
from audioeval.resources import metrics_dir
from audioeval.scoring import TaskScorer, load_metric
from audioeval.stats import summarize_group

# Whisper+GPT-4, reference first: the paper's per-domain Tables 11, 13/14, 17/18, 21 and dataset Table 9
PAPER_DOMAIN_MEANS = {
    "general": [8.63, 8.51, 7.84],
    "skill": [8.72, 8.93, 8.66, 9.00, 8.96, 8.34, 8.25, 9.38, 8.12, 8.92, 8.12, 8.93],
    "multilingual": [7.26, 7.34, 8.99, 8.32, 8.60, 7.81, 7.68, 8.07, 8.31],
    "ambiguity": [4.02, 5.02, 3.64, 9.03],
}
PAPER_TABLE_9 = {"general": 8.33, "skill": 8.54, "multilingual": 8.04, "ambiguity": 5.43}


def items_with_domain_means(ds: str, means: list[float], sizes: dict[str, int]) -> list[ItemScore]:
    """`sizes[domain]` items per domain, all scoring that domain's mean."""
    return [
        ItemScore(ds, domain, {}, {"score": mean}, False)
        for domain, mean in zip(DOMAINS[ds], means, strict=True)
        for _ in range(sizes[domain])
    ]


@pytest.mark.parametrize("ds", list(PAPER_TABLE_9))
def test_dataset_means_reproduce_the_papers_table_9_from_its_domain_tables(ds: str):
    items = items_with_domain_means(ds, PAPER_DOMAIN_MEANS[ds], PAPER_DOMAIN_SIZES[ds])
    assert round(dataset_mean(items, "score", 0, 0).value, 2) == PAPER_TABLE_9[ds]


def test_ambiguity_is_the_plain_mean_of_its_four_types_and_skill_is_item_weighted():
    amb = items_with_domain_means("ambiguity", [4.02, 5.02, 3.64, 9.03], PAPER_DOMAIN_SIZES["ambiguity"])
    assert dataset_mean(amb, "score", 0, 0).value == pytest.approx(5.4275)  # printed 5.43
    assert np.mean([i.scores["score"] for i in amb]) == pytest.approx(4.985, abs=1e-3)  # the item mean
    skill = items_with_domain_means("skill", PAPER_DOMAIN_MEANS["skill"], PAPER_DOMAIN_SIZES["skill"])
    assert dataset_mean(skill, "score", 0, 0).value == pytest.approx(8.541, abs=1e-3)  # printed 8.54
    assert np.mean(PAPER_DOMAIN_MEANS["skill"]) == pytest.approx(8.694, abs=1e-3)  # the plain mean, not used
    # --limit samples skills evenly: the weighting stays the paper's
    even = items_with_domain_means("skill", PAPER_DOMAIN_MEANS["skill"], dict.fromkeys(DOMAINS["skill"], 4))
    assert dataset_mean(even, "score", 0, 0).value == pytest.approx(8.541, abs=1e-3)


def test_the_average_of_the_four_datasets_reproduces_table_9():
    summaries = [
        dataset_mean(items_with_domain_means(ds, means, PAPER_DOMAIN_SIZES[ds]), "score", 0, 0)
        for ds, means in PAPER_DOMAIN_MEANS.items()
    ]
    # the plain mean of the dataset means; the paper printed 7.59, the mean of its rounded dataset means
    # ((8.33 + 8.54 + 8.04 + 5.43) / 4 = 7.585)
    assert summarize_group(summaries).value == pytest.approx(7.584, abs=1e-3)


def test_results_json_uses_the_same_rule_for_every_score_column():
    task = TaskRegistry.discover().tasks["adu_ambiguity"]
    names = [
        "empty_response_rate",
        "domain_stratum",
        "domain_weight",
        "score",
        "score@j",
        "score_ref_first@j",
    ]
    names += ["score_resp_first@j", "position_bias@j", "judge_failure_rate@j", "judge_out_of_range@j"]
    aggs = TaskScorer(task).aggregations(names)
    assert "domain_stratum" not in aggs and "domain_weight" not in aggs
    for name in ("score", "score@j", "score_ref_first@j", "score_resp_first@j", "position_bias@j"):
        assert aggs[name].kind == "stratified" and aggs[name].inputs == (
            name,
            "domain_stratum",
            "domain_weight",
        )
    for name in ("empty_response_rate", "judge_failure_rate@j", "judge_out_of_range@j"):
        assert aggs[name].kind == "mean"  # shares of items


# --- position columns ------------------------------------------------------------------------------------
def verdict(ref_first: float | None, resp_first: float | None) -> dict[str, Any]:
    both = ref_first is not None and resp_first is not None
    return {
        "holistic": {
            "J": {
                "value": (ref_first + resp_first) / 2 if both else None,
                "values": [ref_first, resp_first],
                "raw": [],
                "error": None if both else "HTTP 500",
                "out_of_range": False,
            }
        }
    }


# two items judged in both orders, three only reference first, two only response first (the other order
# failed): before, each column averaged whatever it had: 6.80 (n=5), 4.75 (n=4), bias +1.00 (n=2)
POSITION_EXAMPLE = [(6, 7), (6, 7), (8, None), (7, None), (7, None), (None, 2), (None, 3)]


def test_both_orders_and_the_bias_are_over_the_items_where_both_orders_succeeded():
    metric = load_metric(metrics_dir() / "adu_judge_score")
    info = [{"metadata": {"dataset": "general", "domain": "helpful_question"}}] * len(POSITION_EXAMPLE)
    scores = metric.compute(
        predictions=["an answer"] * len(POSITION_EXAMPLE),
        references=["ref"] * len(POSITION_EXAMPLE),
        judgments=[verdict(a, b) for a, b in POSITION_EXAMPLE],
        judge_ids=["J"],
        sample_info=info,
    )
    items = [
        ItemScore("general", "helpful_question", {}, {k: v[i] for k, v in scores.items()}, False)
        for i in range(len(POSITION_EXAMPLE))
    ]
    block = summarise(items, 0, 0)["datasets"]["general"]["judges"]["J"]
    got = {
        k: (block[k]["mean"], block[k]["n"]) for k in ("score", "ref_first", "resp_first", "position_bias")
    }
    assert got == {
        "score": (6.5, 2),
        "ref_first": (6.0, 2),
        "resp_first": (7.0, 2),
        "position_bias": (1.0, 2),
    }
    assert block["failures"] == 5 and block["judged"] == 7
    text = markdown(summarise(items, 0, 0), "m", None)
    assert "| J | ADU-General | 6.50 (n=2) | 6.00 (n=2) | 7.00 (n=2) | 1.00 (n=2) | 5/7 |" in text
    assert "| Helpful Question | J | 6.50 (n=2) | 6.00 (n=2) | 7.00 (n=2) | 1.00 (n=2) |" in text


# --- what was not scored ---------------------------------------------------------------------------------
def test_the_domain_plot_marks_no_score_differently_from_zero():
    items = [
        ItemScore("ambiguity", "intonation", {}, {"score@J": 0.0, "judge_failure_rate@J": 0.0}, False),
        ItemScore("ambiguity", "pause", {}, {"score@J": None, "judge_failure_rate@J": 1.0}, False),
        ItemScore("ambiguity", "homophone", {}, {"score@J": 6.0, "judge_failure_rate@J": 0.0}, False),
    ]
    summary = summarise(items, 0, 0)
    fig = domain_figure(summary, "m")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert labels.count(NO_SCORE_LABEL) == 1 and "0.0" in labels and "6.0" in labels
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    no_score = next(t for t in ax.texts if t.get_text() == NO_SCORE_LABEL)
    assert ticks[round(no_score.get_position()[0])] == "Pause"
    text = markdown(summary, "m", None)
    assert "| Pause | J | — (n=0) |" in text and "| Intonation | J | 0.00 (n=1) |" in text
    assert "| m | J | 3.00 (n=2; 1 failed) | 3.00 (n=2; 1 failed) |" in text
