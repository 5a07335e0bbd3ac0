"""Facets: a task declares episode metadata fields, every score row carries their values, and the core
aggregates every metric per value with the task's own rules and bootstrap CIs (results.json `facets`), for
tasks and for groups, independent of the order the samples arrive in."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from audioeval.config.registry import TaskRegistry
from audioeval.config.task import GroupConfig, load_task_config
from audioeval.errors import ConfigError
from audioeval.results.aggregate import (
    aggregate_facets,
    aggregate_group_facets,
    aggregate_groups,
    aggregate_task,
)
from audioeval.results.record import section_json
from audioeval.results.score_rows import ScoreRow, facet_values
from audioeval.results.stats import Aggregation, summarize
from audioeval.seeds import stable_seed
from tests.conftest import latest_run, load_results, load_samples, run_cli


class MeanScorer:
    """Every score is a plain mean (what TaskScorer does for a task without `aggregation:`)."""

    def aggregations(self, names):
        return {n: Aggregation("mean", (n,)) for n in names}


def rows_with(values: dict[str, list[float]], facet: list[str], shots=(0,)) -> list[ScoreRow]:
    rows = []
    for k in shots:
        for i, value in enumerate(facet):
            rows.append(
                ScoreRow(i, k, {n: v[i] for n, v in values.items()}, False, False, 1.0, facets={"f": value})
            )
    return rows


def test_facet_values_read_nested_fields_and_skip_what_is_absent():
    meta = {"domain": "law", "variation": {"gender": "female", "rate": None}, "n": 3}
    got = facet_values(meta, ("domain", "variation.gender", "variation.rate", "variation.pitch", "n", "x.y"))
    assert got == {"domain": "law", "variation.gender": "female", "n": "3"}


def test_each_facet_value_is_aggregated_like_the_task_over_its_own_samples():
    acc = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    facet = ["a", "b", "a", "a", "b", "b", "a"]
    rows = rows_with({"accuracy": acc}, facet, shots=(0, 1))
    rows.append(ScoreRow(7, 0, {}, False, True, 1.0, facets={"f": "b"}))  # a model error in b at k=0
    blocks, kept = aggregate_facets("t", [0, 1], rows, MeanScorer(), ("f",), 500, 3)
    out = section_json(blocks)
    assert set(out["f"]) == {"a", "b"} and set(out["f"]["a"]) == {"0-shot", "1-shot"}
    a = out["f"]["a"]["0-shot"]
    assert a["accuracy"] == 1.0 and a["n"] == 4 and "errors" not in a
    b = out["f"]["b"]["0-shot"]
    assert b["accuracy"] == 0.0 and b["n"] == 4 and b["errors"] == 1 and b["accuracy_missing"] == 1
    # the same bootstrap as the task's, seeded by (seed, task, k, facet, value, metric)
    mixed = rows_with({"accuracy": [1.0, 0.0, 1.0, 0.0]}, ["x", "x", "x", "x"])
    block = section_json(aggregate_facets("t", [0], mixed, MeanScorer(), ("f",), 500, 3)[0])["f"]["x"][
        "0-shot"
    ]
    expected = summarize(
        {"x": np.array([1.0, 0.0, 1.0, 0.0])},
        Aggregation("mean", ("x",)),
        500,
        stable_seed(3, "t", 0, "f", "x", "accuracy"),
    )
    assert block["accuracy_ci95"] == expected.ci95 and block["accuracy_stderr"] == expected.stderr
    assert kept["f"]["a"][0]["accuracy"].value == 1.0


def test_facet_cells_do_not_depend_on_the_order_rows_arrive_in():
    rng = random.Random(0)
    acc = [float(rng.random() < 0.5) for _ in range(40)]
    facet = [rng.choice("xyz") for _ in range(40)]
    rows = rows_with({"accuracy": acc}, facet, shots=(0, 1))
    shuffled = rows[:]
    rng.shuffle(shuffled)
    first = aggregate_facets("t", [0, 1], rows, MeanScorer(), ("f",), 300, 1)[0]
    assert aggregate_facets("t", [0, 1], shuffled, MeanScorer(), ("f",), 300, 1)[0] == first


def test_stratified_rule_within_a_facet_value_is_the_tasks_rule():
    """A task's declared rule applies inside every facet cell: here a weighted mean of strata."""

    class Stratified:
        def aggregations(self, names):
            return {"score": Aggregation("stratified", ("score", "stratum", "weight"))}

    values = {"score": [2.0, 4.0, 10.0, 0.0], "stratum": [0, 0, 1, 1], "weight": [1.0, 1.0, 3.0, 3.0]}
    rows = rows_with(values, ["v", "v", "v", "w"])
    out = section_json(aggregate_facets("t", [0], rows, Stratified(), ("f",), 0, 0)[0])
    assert out["f"]["v"]["0-shot"]["score"] == pytest.approx((3.0 * 1 + 10.0 * 3) / 4)
    assert out["f"]["w"]["0-shot"]["score"] == 0.0


class TwoTaskRegistry:
    groups = {"g": GroupConfig(name="g", members=["t1", "t2"], aggregate_metrics=["score", "score@*"])}

    def leaf_tasks(self, name):
        return ["t1", "t2"]


def test_groups_average_their_tasks_facet_values_and_globs_pick_metrics():
    s1 = rows_with(
        {"score": [1.0, 3.0, 5.0], "score@j": [1.0, 1.0, 1.0], "other": [0.0] * 3}, ["a", "a", "b"]
    )
    s2 = rows_with({"score": [7.0, 9.0], "score@j": [3.0, 3.0], "other": [0.0] * 2}, ["a", "c"])
    facet_summaries, task_summaries = {}, {}
    for name, rows in (("t1", s1), ("t2", s2)):
        _, facet_summaries[name] = aggregate_facets(name, [0], rows, MeanScorer(), ("f",), 200, 0)
        _, task_summaries[name] = aggregate_task(name, [0], rows, MeanScorer(), 200, 0)
    rows = {"t1": s1, "t2": s2}
    groups = section_json(aggregate_group_facets(TwoTaskRegistry(), ["g"], facet_summaries, rows, 200, 0))[
        "g"
    ]["f"]
    assert groups["a"]["0-shot"]["score"] == pytest.approx((2.0 + 7.0) / 2)  # mean of the tasks' means
    assert groups["a"]["0-shot"]["subtasks"] == ["t1", "t2"]
    assert groups["c"]["0-shot"]["subtasks"] == ["t2"] and groups["c"]["0-shot"]["score"] == 9.0
    assert "other" not in groups["a"]["0-shot"]
    block = section_json(aggregate_groups(TwoTaskRegistry(), ["g"], task_summaries))["g"]["0-shot"]
    assert [k for k in block if not k.endswith(("_stderr", "_ci95"))] == ["score", "score@j", "n", "subtasks"]
    assert block["score@j"] == pytest.approx(2.0)


def test_a_pooled_group_facet_is_the_plain_mean_over_all_its_tasks_samples():
    class Pooled(TwoTaskRegistry):
        groups = {
            "g": GroupConfig(
                name="g", members=["t1", "t2"], aggregate_metrics=["score"], facet_aggregation="pooled_mean"
            )
        }

    s1 = rows_with({"score": [1.0, 3.0, 5.0], "helper": [9.0] * 3}, ["a", "a", "b"])
    s2 = rows_with({"score": [8.0, None, 9.0], "helper": [9.0] * 3}, ["a", "a", "c"])
    s2.append(ScoreRow(9, 0, {}, False, True, 1.0, facets={"f": "a"}))  # a model error
    facet_summaries = {
        name: aggregate_facets(name, [0], rows, MeanScorer(), ("f",), 200, 0)[1]
        for name, rows in (("t1", s1), ("t2", s2))
    }
    got = section_json(aggregate_group_facets(Pooled(), ["g"], facet_summaries, {"t1": s1, "t2": s2}, 200, 0))
    got = got["g"]["f"]
    a = got["a"]["0-shot"]
    assert a["score"] == pytest.approx((1.0 + 3.0 + 8.0) / 3)  # not the mean of the tasks' means (5.0)
    assert (a["n"], a["errors"], a["score_missing"]) == (5, 1, 2) and "helper" not in a
    assert len(a["score_ci95"]) == 2 and a["subtasks"] == ["t1", "t2"]
    assert got["c"]["0-shot"]["score"] == 9.0 and got["c"]["0-shot"]["subtasks"] == ["t2"]


def test_facet_aggregation_of_a_group_is_checked(tmp_path):
    from audioeval.config.task import load_group_config

    path = tmp_path / "g.yaml"
    path.write_text("group: g\ntask: [a]\nfacet_aggregation: pooled\n")
    with pytest.raises(ConfigError, match=r"g\.yaml:3.*facet_aggregation.*mean_of_tasks, pooled_mean"):
        load_group_config(path)


def test_facets_must_be_a_list_of_field_names(tmp_path, toy_dir):
    path = tmp_path / "bad.yaml"
    path.write_text(f"include: {toy_dir / 'toy_tones.yaml'}\ntask: bad\nfacets: domain\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*facets.*list of episode metadata field names"):
        load_task_config(path)


def test_a_run_writes_facet_cells_that_match_its_samples(tmp_path, toy_dir):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "toy_faceted.yaml").write_text(
        f"include: {toy_dir / 'toy_tones.yaml'}\ntask: toy_faceted\ngroup: []\nfacets: [query_freq]\n"
    )
    out = tmp_path / "out"
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_faceted",
            "--include_path",
            str(tasks),
            "--model",
            "chance",
            "--log_samples",
            "--no_progress",
            "--no_cache",
            "--output_path",
            str(out),
        ]
    )
    assert code == 0, err
    run_dir = latest_run(out)
    cells = load_results(run_dir)["facets"]["toy_faceted"]["query_freq"]
    samples = load_samples(run_dir, "toy_faceted")
    for s in samples:
        cell = cells[str(s["metadata"]["query_freq"])][f"{s['shots']}-shot"]
        same = [
            x["scores"]["accuracy"]
            for x in samples
            if x["metadata"]["query_freq"] == s["metadata"]["query_freq"] and x["shots"] == s["shots"]
        ]
        assert cell["n"] == len(same) and cell["accuracy"] == pytest.approx(np.mean(same))
    assert json.loads((run_dir / "results.json").read_text())["reference_models"] == {}
    assert sum(c["0-shot"]["n"] for c in cells.values()) == sum(s["shots"] == 0 for s in samples) > 1


def test_unknown_reference_model_is_named_before_the_run(tmp_path, toy_dir):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "toy_ref.yaml").write_text(
        f"include: {toy_dir / 'toy_tones.yaml'}\ntask: toy_ref\ngroup: []\nreference_models: [shortcutt]\n"
    )
    code, _, err = run_cli(
        [
            "--tasks",
            "toy_ref",
            "--include_path",
            str(tasks),
            "--model",
            "chance",
            "--no_progress",
            "--no_cache",
            "--output_path",
            str(tmp_path / "o"),
        ]
    )
    assert code != 0 and "toy_ref.yaml: reference_models: no model named 'shortcutt'" in err
    assert not list(Path(tmp_path / "o").glob("*/*/results.json"))


def test_registry_tasks_declare_facets_the_adu_report_needs():
    task = TaskRegistry.discover().tasks["adu_skill"]
    assert task.facets[0] == "domain" and "variation.gender" in task.facets


def test_facet_draws_are_kept_only_for_groups_that_average_task_facets():
    from audioeval.results.aggregate import needs_facet_draws

    class Pooled(TwoTaskRegistry):
        groups = {"g": GroupConfig(name="g", members=["t1", "t2"], facet_aggregation="pooled_mean")}

    assert needs_facet_draws(TwoTaskRegistry(), ["g"], "t1")
    assert not needs_facet_draws(TwoTaskRegistry(), [], "t1")
    assert not needs_facet_draws(Pooled(), ["g"], "t1")
    rows = rows_with({"accuracy": [1.0, 0.0, 1.0]}, ["a", "a", "a"])
    with_draws = aggregate_facets("t", [0], rows, MeanScorer(), ("f",), 50, 0)
    without = aggregate_facets("t", [0], rows, MeanScorer(), ("f",), 50, 0, keep_draws=False)
    assert with_draws[0] == without[0]  # results.json does not change
    assert with_draws[1]["f"]["a"][0]["accuracy"].distribution is not None
    assert without[1]["f"]["a"][0]["accuracy"].distribution is None
