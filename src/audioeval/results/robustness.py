"""The robustness table: for every task, k and metric, the score under each condition beside the clean
score, the drop (clean minus degraded; for lower-is-better metrics degraded minus clean, so a positive drop
is always a loss) and the relative drop (drop / |clean|), each with a 95% CI.

The CIs of the drops come from a paired bootstrap over episodes: clean and degraded samples are the same
episodes, so both are resampled with the same indices (the same seed and sample count make
`Aggregation.resampled` draw the same indices), which is far tighter than comparing two independent CIs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from audioeval.results.blocks import PerK, ShotBlock, shot_key
from audioeval.results.score_rows import ScoreRow, score_arrays, score_names
from audioeval.results.scoring import HARNESS_SCORES
from audioeval.results.stats import Aggregation, percentile_ci
from audioeval.results.units import PERCENT_NOTE, is_proportion, show
from audioeval.seeds import stable_seed


def lower_is_better(metric: str, declared: dict[str, bool]) -> bool:
    """A task's `higher_is_better` decides; otherwise harness rates (parse/judge failures, empty
    responses: `*_rate`) are lower-is-better and every other metric higher-is-better."""
    if metric in declared:
        return not declared[metric]
    return metric in HARNESS_SCORES or metric.endswith("_rate")


def paired_drop(
    clean: dict[str, np.ndarray],
    degraded: dict[str, np.ndarray],
    agg: Aggregation,
    lower_better: bool,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Drop and relative drop of one aggregate over the episodes scored in both conditions."""
    mask = agg.valid_mask(clean) & agg.valid_mask(degraded)
    n = int(mask.sum())
    nan_pair = [math.nan, math.nan]
    out: dict[str, Any] = {"n_paired": n, "drop": math.nan, "drop_ci95": nan_pair}
    out.update({"relative_drop": math.nan, "relative_drop_ci95": nan_pair})
    if n == 0:
        return out
    a = {k: clean[k][mask] for k in agg.inputs}
    b = {k: degraded[k][mask] for k in agg.inputs}
    sign = -1.0 if lower_better else 1.0
    base, value = agg.value(a), agg.value(b)
    out["drop"] = sign * (base - value)
    out["relative_drop"] = out["drop"] / abs(base) if base else math.nan
    if n_resamples > 0 and n > 1:
        base_draws = agg.resampled(a, n_resamples, np.random.default_rng(seed))
        value_draws = agg.resampled(b, n_resamples, np.random.default_rng(seed))  # the same indices
        drops = sign * (base_draws - value_draws)
        out["drop_ci95"] = percentile_ci(drops)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["relative_drop_ci95"] = percentile_ci(
                np.where(base_draws != 0, drops / np.abs(base_draws), np.nan)
            )
    else:
        out["drop_ci95"] = [out["drop"], out["drop"]]
        out["relative_drop_ci95"] = [out["relative_drop"], out["relative_drop"]]
    return out


def robustness_rows(
    tasks: list[Any], rows: dict[str, list[ScoreRow]], results: dict[str, PerK], n_resamples: int, seed: int
) -> list[dict[str, Any]]:
    """One row per (task, k, metric, condition), the clean condition first."""
    clean = {t.config.name: t for t in tasks if t.augment is None}
    out: list[dict[str, Any]] = []
    for base in clean.values():
        degraded = [t for t in tasks if t.augment is not None and t.config.name == base.name]
        if not degraded:
            continue
        names = score_names(rows[base.name])
        for k in base.shots:
            clean_cols, _ = score_arrays(rows[base.name], k, names)
            reported = results[base.name][shot_key(k)]
            for metric, agg in base.scorer.aggregations(list(clean_cols)).items():
                if metric not in reported.metrics or not all(i in clean_cols for i in agg.inputs):
                    continue
                lower = lower_is_better(metric, base.config.higher_is_better)
                common = {"task": base.name, "k": k, "metric": metric, "lower_is_better": lower}
                out.append({**common, "condition": "clean", "level": None, **_score(reported, metric)})
                for task in degraded:
                    cols, _ = score_arrays(rows[task.name], k, names)
                    draw_seed = stable_seed(seed, "robustness", base.name, k, metric, task.augment.name)
                    out.append(
                        {
                            **common,
                            "condition": task.augment.name,
                            "level": _swept_level(task.augment),
                            **_score(results[task.name][shot_key(k)], metric),
                            **paired_drop(clean_cols, cols, agg, lower, n_resamples, draw_seed),
                        }
                    )
    return out


def _score(block: ShotBlock, metric: str) -> dict[str, Any]:
    stats = block.metrics[metric]
    return {
        "value": stats.value,
        "ci95": list(stats.ci95) if stats.ci95 is not None else None,
        "n": block.scored(metric),
    }


def _swept_level(condition: Any) -> float | None:
    """The level of the condition's first levelled step (the swept one when the chain has one)."""
    levels = [s.level for s in condition.steps if s.level is not None]
    return levels[0] if len(levels) == 1 else None


def markdown(rows: list[dict[str, Any]]) -> str:
    """The robustness table; a proportion's scores in % and its drops in percentage points (results/units.py)."""
    lines = [
        "| task | k | metric | condition | score | 95% CI | drop vs clean | 95% CI | relative drop | 95% CI | n |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    proportions = {
        key: is_proportion(
            v for r in rows if (r["task"], r["metric"]) == key for v in [r["value"], *(r["ci95"] or [])]
        )
        for key in {(r["task"], r["metric"]) for r in rows}
    }
    for r in rows:
        clean = r["condition"] == "clean"
        proportion = proportions[(r["task"], r["metric"])]
        drop = (
            ["—", "", "—", ""]
            if clean
            else [
                show(r["drop"], proportion, False)
                + (" pp" if proportion and not _missing(r["drop"]) else ""),
                _ci(r["drop_ci95"], proportion),
                _percent(r["relative_drop"]),
                _ci(r["relative_drop_ci95"], True),
            ]
        )
        metric = r["metric"] + (" (lower is better)" if r["lower_is_better"] else "")
        lines.append(
            f"| {r['task']} | {r['k']} | {metric} | {r['condition']} | {show(r['value'], proportion)} | "
            f"{_ci(r['ci95'], proportion)} | " + " | ".join(drop) + f" | {r['n']} |"
        )
    lines += ["", f"Scores: {PERCENT_NOTE} (pp); relative drops in % of the clean score."]
    return "\n".join(lines)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _percent(value: Any) -> str:
    return "—" if _missing(value) else f"{100 * value:.1f}%"


def _ci(pair: Any, percent: bool) -> str:
    if not pair:
        return "—"
    return f"[{show(pair[0], percent, False)}, {show(pair[1], percent, False)}]"
