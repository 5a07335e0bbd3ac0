"""A group's `pooled:` rule: per shot setting, each item's (task, episode) value is the mean of its scores at the
setting's k, the items of all the group's tasks are pooled, and each metric gets a bootstrap CI over items
(results.json `pooled`); what ALICE's Table 2 reports, computed by the core and read by the report."""

from __future__ import annotations

import numpy as np
import pytest

from audioeval.config.pooled import PooledRule, ShotSetting, read_pooled
from audioeval.config.task import GroupConfig, load_group_config
from audioeval.errors import ConfigError
from audioeval.results.aggregate import aggregate_pooled
from audioeval.results.record import section_json
from audioeval.results.score_rows import ScoreRow

RULE = PooledRule(
    ("strict", "strict_*"),
    {"zero-shot": ShotSetting(ks=(0,)), "one-shot": ShotSetting(ks=(1,)), "few-shot": ShotSetting(min_k=1)},
)


class Registry:
    """Two tasks in group g, which pools them."""

    groups = {"g": GroupConfig(name="g", members=["t1", "t2"], pooled=RULE)}

    def leaf_tasks(self, name):
        return self.groups[name].members if name in self.groups else [name]


def row(episode, k, **scores):
    return ScoreRow(episode, k, scores, False, False, 1.0)


def test_items_are_pooled_over_tasks_with_their_mean_over_the_settings_k():
    rows = {
        # t1: two items at k = 0, 1, 3; item 1 has no score at k=3 (a judge failure, say)
        "t1": [row(0, 0, strict=1.0), row(0, 1, strict=0.0), row(0, 3, strict=1.0),
               row(1, 0, strict=0.0), row(1, 1, strict=1.0), row(1, 3, strict=None)],
        # t2: one item, only at k = 1 and 3, with a per-group column t1 lacks; an error at k=3
        "t2": [row(0, 1, strict=1.0, strict_a=1.0), ScoreRow(0, 3, {}, False, True, 1.0)],
    }  # fmt: skip
    pooled = section_json(aggregate_pooled(Registry(), ["g"], rows, 200, 0))["g"]
    assert set(pooled) == {"zero-shot", "one-shot", "few-shot"}
    zero = pooled["zero-shot"]
    assert zero["strict"] == 0.5 and zero["n"] == 2 and zero["subtasks"] == ["t1"]  # t2 never ran at k=0
    one = pooled["one-shot"]
    assert one["strict"] == pytest.approx(2 / 3) and one["n"] == 3 and one["subtasks"] == ["t1", "t2"]
    few = pooled["few-shot"]  # items: t1/0 -> mean(0, 1), t1/1 -> 1 (k=3 unscored), t2/0 -> 1 (k=3 failed)
    assert few["strict"] == pytest.approx(np.mean([0.5, 1.0, 1.0])) and few["errors"] == 1
    lo, hi = few["strict_ci95"]
    assert lo <= few["strict"] <= hi
    # a glob picks up per-group columns; items without one are missing, tasks without one unscored
    assert few["strict_a"] == 1.0 and few["strict_a_missing"] == 2 and few["strict_a_unscored"] == ["t1"]


def test_the_pooled_bootstrap_is_seeded_by_group_and_setting_so_reruns_agree():
    rows = {"t1": [row(i, 1, strict=float(i % 2)) for i in range(9)], "t2": [row(0, 1, strict=1.0)]}
    first = aggregate_pooled(Registry(), ["g"], rows, 300, 4)
    again = aggregate_pooled(Registry(), ["g"], {t: list(reversed(r)) for t, r in rows.items()}, 300, 4)
    assert first == again
    assert (
        first["g"]["one-shot"].metrics["strict"].ci95
        != aggregate_pooled(Registry(), ["g"], rows, 300, 5)["g"]["one-shot"].metrics["strict"].ci95
    )


def test_a_group_without_the_rule_or_outside_the_run_has_no_pooled_block():
    rows = {"t1": [row(0, 0, strict=1.0)]}
    assert aggregate_pooled(Registry(), [], rows, 100, 0) == {}
    plain = Registry()
    plain.groups = {"g": GroupConfig(name="g", members=["t1", "t2"])}
    assert aggregate_pooled(plain, ["g"], rows, 100, 0) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pooled: [strict]", "`pooled` must be a mapping with `metrics` and `settings`"),
        ("pooled: {metrics: [], settings: {one: [1]}}", "`pooled.metrics` must be a list"),
        ("pooled: {metrics: [strict], settings: {}}", "`pooled.settings` must map setting names"),
        ("pooled: {metrics: [strict], settings: {few: {from: 1}}}", "pooled setting 'few' must be a list of shot"),
        ("pooled: {metrics: [strict], settings: {few: [-1]}}", "pooled setting 'few' must be a list of shot"),
    ],
)  # fmt: skip
def test_a_malformed_rule_is_one_line_naming_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "g.yaml"
    path.write_text(f"group: g\ntask: [a]\n{text}\n")
    with pytest.raises(ConfigError, match=r"g\.yaml:3: .*" + message.replace("(", r"\(").replace("[", r"\[")):
        load_group_config(path)


def test_the_rule_reads_lists_of_k_and_a_lower_bound():
    rule = read_pooled({"metrics": ["m"], "settings": {"zero": [0], "few": {"min": 1}}})
    assert rule is not None and not rule.settings["zero"].holds(1) and rule.settings["zero"].holds(0)
    assert (
        rule.settings["few"].holds(1) and rule.settings["few"].holds(8) and not rule.settings["few"].holds(0)
    )
