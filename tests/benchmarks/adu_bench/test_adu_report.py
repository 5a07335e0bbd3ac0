"""The ADU-Bench numbers follow the paper's arithmetic (checked on its own Tables 2, 8, 9 and 11-22) in the
core aggregation the task declares, a judge's two orders are compared on the same items, and the report,
which only formats results.json, and its plot say what was not scored."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from audioeval.benchmarks.adu_bench.domains import DOMAINS, PAPER_DOMAIN_SIZES, domain_stratum, domain_weight
from audioeval.benchmarks.adu_bench.report import summarise
from audioeval.benchmarks.adu_bench.report_plot import NO_SCORE_LABEL, domain_figure
from audioeval.benchmarks.adu_bench.report_text import markdown
from audioeval.config.registry import TaskRegistry
from audioeval.resources import metrics_dir
from audioeval.results.aggregate import (
    aggregate_facets,
    aggregate_group_facets,
    aggregate_groups,
    aggregate_task,
)
from audioeval.results.blocks import ShotBlock
from audioeval.results.record import ModelRecord, RunRecord, Sections, TaskRecord
from audioeval.results.score_rows import ScoreRow
from audioeval.results.scoring import TaskScorer, load_metric
from audioeval.results.stats import MetricSummary

REGISTRY = TaskRegistry.discover()
SCORERS: dict[str, TaskScorer] = {}

# Whisper+GPT-4, reference first: the paper's per-domain Tables 11, 13/14, 17/18, 21 and dataset Table 9
PAPER_DOMAIN_MEANS = {
    "general": [8.63, 8.51, 7.84],
    "skill": [8.72, 8.93, 8.66, 9.00, 8.96, 8.34, 8.25, 9.38, 8.12, 8.92, 8.12, 8.93],
    "multilingual": [7.26, 7.34, 8.99, 8.32, 8.60, 7.81, 7.68, 8.07, 8.31],
    "ambiguity": [4.02, 5.02, 3.64, 9.03],
}
PAPER_TABLE_9 = {"general": 8.33, "skill": 8.54, "multilingual": 8.04, "ambiguity": 5.43}


Item = tuple[str, str, dict[str, Any]]  # (dataset, domain, the metric's per-sample scores)


def _scorer(ds: str) -> TaskScorer:
    if ds not in SCORERS:
        SCORERS[ds] = TaskScorer(REGISTRY.tasks[f"adu_{ds}"])
    return SCORERS[ds]


def _rows(items: list[Item], variation: list[dict[str, str]] | None = None) -> list[ScoreRow]:
    """Score rows as the evaluation loop makes them: the metric's columns (with the domain's stratum and
    weight it adds) and the facets the ADU tasks declare."""
    rows = []
    for i, (ds, domain, scores) in enumerate(items):
        columns = {
            **scores,
            "domain_stratum": domain_stratum(ds, domain),
            "domain_weight": domain_weight(ds, domain),
        }
        facets = {
            "domain": domain,
            **{f"variation.{k}": v for k, v in ((variation or [{}] * len(items))[i]).items()},
        }
        rows.append(ScoreRow(i, 0, columns, False, False, 1.0, facets=facets))
    return rows


def dataset_mean(items: list[Item], key: str = "score") -> MetricSummary:
    """The dataset mean results.json reports: the task's declared aggregation in the core."""
    ds = items[0][0]
    _, summaries = aggregate_task(f"adu_{ds}", [0], _rows(items), _scorer(ds), 0, 0)
    return summaries[0][key]


def run_record(sections: Sections, tasks: list[str], judges=("J",)) -> RunRecord:
    """The record of a run of these tasks with these numbers (the rest as a plain run has it)."""
    configs = {
        t: TaskRecord("h", 0, [0], 1, "", {"metadata": dict(REGISTRY.tasks[t].metadata)}) for t in tasks
    }
    return RunRecord(
        sections, configs, ModelRecord("m", {}, {}, 1), dict.fromkeys(judges, {}), None, 0, None, {}, None,
        0, 1, {}, None, "", {}, [], [], [],
    )  # fmt: skip


def results_json(items: list[Item], n_resamples: int = 0, variation=None, judges=("J",)) -> RunRecord:
    """The record of a run over these items (one task per dataset, the adu_bench group), as the core
    makes it."""
    out = Sections()
    task_summaries, facet_summaries, all_rows = {}, {}, {}
    for ds in dict.fromkeys(i[0] for i in items):
        task = f"adu_{ds}"
        mine = [(n, i) for n, i in enumerate(items) if i[0] == ds]
        rows = _rows([i for _, i in mine], [variation[n] for n, _ in mine] if variation else None)
        all_rows[task] = rows
        out.results[task], task_summaries[task] = aggregate_task(task, [0], rows, _scorer(ds), n_resamples, 0)
        facets = REGISTRY.tasks[task].facets
        out.facets[task], facet_summaries[task] = aggregate_facets(
            task, [0], rows, _scorer(ds), facets, n_resamples, 0
        )
    out.groups = aggregate_groups(REGISTRY, ["adu_bench"], task_summaries)
    out.facets.update(
        aggregate_group_facets(REGISTRY, ["adu_bench"], facet_summaries, all_rows, n_resamples, 0)
    )
    return run_record(out, list(out.results), judges)


def items_with_domain_means(ds: str, means: list[float], sizes: dict[str, int]) -> list[Item]:
    """`sizes[domain]` items per domain, all scoring that domain's mean."""
    return [
        (ds, domain, {"score": mean})
        for domain, mean in zip(DOMAINS[ds], means, strict=True)
        for _ in range(sizes[domain])
    ]


@pytest.mark.parametrize("ds", list(PAPER_TABLE_9))
def test_dataset_means_reproduce_the_papers_table_9_from_its_domain_tables(ds: str):
    items = items_with_domain_means(ds, PAPER_DOMAIN_MEANS[ds], PAPER_DOMAIN_SIZES[ds])
    assert round(dataset_mean(items).value, 2) == PAPER_TABLE_9[ds]


def test_ambiguity_is_the_plain_mean_of_its_four_types_and_skill_is_item_weighted():
    amb = items_with_domain_means("ambiguity", [4.02, 5.02, 3.64, 9.03], PAPER_DOMAIN_SIZES["ambiguity"])
    assert dataset_mean(amb).value == pytest.approx(5.4275)  # printed 5.43
    assert np.mean([i[2]["score"] for i in amb]) == pytest.approx(4.985, abs=1e-3)  # the item mean
    skill = items_with_domain_means("skill", PAPER_DOMAIN_MEANS["skill"], PAPER_DOMAIN_SIZES["skill"])
    assert dataset_mean(skill).value == pytest.approx(8.541, abs=1e-3)  # printed 8.54
    assert np.mean(PAPER_DOMAIN_MEANS["skill"]) == pytest.approx(8.694, abs=1e-3)  # the plain mean, not used
    # --limit samples skills evenly: the weighting stays the paper's
    even = items_with_domain_means("skill", PAPER_DOMAIN_MEANS["skill"], dict.fromkeys(DOMAINS["skill"], 4))
    assert dataset_mean(even).value == pytest.approx(8.541, abs=1e-3)


def test_the_average_of_the_four_datasets_reproduces_table_9():
    """Table 2's Average is the adu_bench group: the plain mean of the dataset means."""
    items = [
        i
        for ds, means in PAPER_DOMAIN_MEANS.items()
        for i in items_with_domain_means(ds, means, PAPER_DOMAIN_SIZES[ds])
    ]
    results = results_json(items, judges=())
    # the paper printed 7.59, the mean of its rounded dataset means ((8.33 + 8.54 + 8.04 + 5.43) / 4 = 7.585)
    assert results.sections.groups["adu_bench"]["0-shot"].value("score") == pytest.approx(7.584, abs=1e-3)
    assert summarise(results)["average"]["mean"] == pytest.approx(7.584, abs=1e-3)


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
    metric = load_metric(metrics_dir() / "adu_bench_judge_score")
    info = [{"metadata": {"dataset": "general", "domain": "helpful_question"}}] * len(POSITION_EXAMPLE)
    scores = metric.compute(
        predictions=["an answer"] * len(POSITION_EXAMPLE),
        references=["ref"] * len(POSITION_EXAMPLE),
        judgments=[verdict(a, b) for a, b in POSITION_EXAMPLE],
        judge_ids=["J"],
        sample_info=info,
    )
    items = [
        ("general", "helpful_question", {k: v[i] for k, v in scores.items()})
        for i in range(len(POSITION_EXAMPLE))
    ]
    summary = summarise(results_json(items))
    block = summary["datasets"]["general"]["judges"]["J"]
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
    text = markdown(summary, "m", None)
    assert "| J | ADU-General | 6.50 (n=2) | 6.00 (n=2) | 7.00 (n=2) | 1.00 (n=2) | 5/7 |" in text
    assert "| Helpful Question | J | 6.50 (n=2) | 6.00 (n=2) | 7.00 (n=2) | 1.00 (n=2) |" in text


# --- what was not scored ---------------------------------------------------------------------------------
def test_the_domain_plot_marks_no_score_differently_from_zero():
    items = [
        ("ambiguity", "intonation", {"score@J": 0.0, "judge_failure_rate@J": 0.0}),
        ("ambiguity", "pause", {"score@J": None, "judge_failure_rate@J": 1.0}),
        ("ambiguity", "homophone", {"score@J": 6.0, "judge_failure_rate@J": 0.0}),
    ]
    summary = summarise(results_json(items))
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


def test_the_variation_breakdown_pools_the_items_of_every_dataset():
    items = [
        ("general", "helpful_question", {"score@J": 8.0}),
        ("general", "daily_question", {"score@J": 6.0}),
        ("skill", "mathematics", {"score@J": 2.0}),
        ("skill", "law", {"score@J": None}),  # a judge failure: not scored, counted as missing
    ]
    for item in items:
        item[2]["score"] = item[2]["score@J"]
    variation = [{"gender": "female"}, {"gender": "male"}, {"gender": "male"}, {"gender": "male"}]
    summary = summarise(results_json(items, n_resamples=200, variation=variation))
    male = summary["variation"]["gender"]["male"]
    assert (male["mean"], male["n"], male["missing"]) == (4.0, 2, 1)  # (6 + 2) / 2, over both datasets
    assert male["ci95"][0] is not None and male["ci95"][0] <= 4.0 <= male["ci95"][1]
    assert summary["variation"]["gender"]["female"]["mean"] == 8.0
    assert "| gender | male | 4.00 [" in markdown(summary, "m", None)


def test_counts_are_exact_on_the_full_dataset_sizes():
    """Failures and empty responses are counted back from results.json's rates without rounding error
    (ADU-General has 12,000 items)."""
    n, failed, empty = 12_000, 4_001, 7
    block = {
        "score@J": 5.0,
        "score@J_missing": failed,
        "judge_failure_rate@J": failed / n,
        "judge_out_of_range@J": 3 / n,
        "empty_response_rate": empty / n,
        "n": n,
    }
    sections = Sections(results={"adu_general": {"0-shot": ShotBlock.from_json(block)}})
    summary = summarise(run_record(sections, ["adu_general"]))["datasets"]["general"]
    judge = summary["judges"]["J"]
    assert (judge["judged"], judge["failures"], judge["out_of_range"]) == (n, failed, 3)
    assert summary["empty_responses"] == empty and judge["score"]["n"] == n - failed
