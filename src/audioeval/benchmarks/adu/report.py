"""The ADU-Bench report: the numbers of the paper's Table 2 (mean judge score per dataset and their average,
one row per judge), Figure 2 and Tables 11-22 (per domain, both orders and each order), Tables 9/10 and
Figure 3(c) (each judge's two orders and its position bias), with 95% bootstrap CIs, the n behind every
number, and counts of empty responses, model errors and judge failures (out-of-range verdicts among them).

Dataset means follow the paper's arithmetic (`audioeval.benchmarks.adu.domains.domain_weight`): the mean of each
domain, combined with the domain weights, bootstrapped within domains — the same aggregation as the
`score` columns in results.json. A judge's two orders and its position bias are computed over the same
items: those where both orders succeeded.

Written into the run folder as adu_bench_report.md, adu_bench_report.json and adu_bench_domains.png.
`python -m audioeval.benchmarks.adu.report RUN_DIR [RUN_DIR ...]` prints Table 2 with one row per run and judge.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audioeval.benchmarks.adu.domains import DATASETS, DOMAINS, domain_stratum, domain_weight
from audioeval.benchmarks.adu.report_text import markdown, table2
from audioeval.errors import UsageError
from audioeval.reports import ReportContext, register
from audioeval.stats import Aggregation, MetricSummary, stable_seed, summarize, summarize_group

log = logging.getLogger("audioeval")
BUILDER = "adu_bench"
VARIATION_FACTORS = ("gender", "speaker", "rate", "pitch", "volume")
REPORT_JSON = "adu_bench_report.json"
# per judge: the column of results (per sample) behind each reported number
ORDER_COLUMNS = {
    "score": "score",
    "ref_first": "score_ref_first",
    "resp_first": "score_resp_first",
    "position_bias": "position_bias",
}


@dataclass
class ItemScore:
    dataset: str
    domain: str
    variation: dict[str, Any]
    scores: dict[str, float | None]
    error: bool


def collect(ctx: ReportContext) -> list[ItemScore]:
    """One ItemScore per evaluated ADU-Bench sample, with its dataset, domain and variation."""
    items = []
    for task in ctx.tasks:
        if task.config.builder != BUILDER:
            continue
        for row in ctx.rows.get(task.name, []):
            meta = task.builder.describe(row.episode)
            items.append(
                ItemScore(meta["dataset"], meta["domain"], meta.get("variation") or {}, row.scores, row.error)
            )
    return items


def _column(values: list[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _item_mean(values: list[float | None], n_resamples: int, seed: int) -> MetricSummary:
    return summarize({"x": _column(values)}, Aggregation("mean", ("x",)), n_resamples, seed)


def dataset_mean(rows: list[ItemScore], key: str, n_resamples: int, seed: int) -> MetricSummary:
    """The paper's dataset mean of per-sample `key`: domain means combined with the domains' weights."""
    columns = {
        "x": _column([i.scores.get(key) for i in rows]),
        "stratum": np.array([domain_stratum(i.dataset, i.domain) for i in rows], dtype=np.float64),
        "weight": np.array([domain_weight(i.dataset, i.domain) for i in rows], dtype=np.float64),
    }
    return summarize(columns, Aggregation("stratified", ("x", "stratum", "weight")), n_resamples, seed)


def as_json(s: MetricSummary) -> dict[str, Any]:
    return {"mean": _num(s.value), "ci95": [_num(x) for x in s.ci95], "n": s.n, "missing": s.missing}


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def judge_ids(items: list[ItemScore], given: list[str] | None = None) -> list[str]:
    """The judges that scored something, in the order they were given (else first seen)."""
    seen: list[str] = []
    for i in items:
        for key in i.scores:
            if key.startswith("score@") and key[6:] not in seen:
                seen.append(key[6:])
    return [j for j in (given or []) if j in seen] + [j for j in seen if j not in (given or [])]


def _ordered(names: set[str], canonical: tuple[str, ...]) -> list[str]:
    return [n for n in canonical if n in names] + sorted(names - set(canonical))


def summarise(
    items: list[ItemScore], n_resamples: int, seed: int, given_judges: list[str] | None = None
) -> dict[str, Any]:
    judges = judge_ids(items, given_judges)
    datasets: dict[str, Any] = {}
    by_judge: dict[str, dict[str, MetricSummary]] = {j: {} for j in judges}
    first: dict[str, MetricSummary] = {}
    for ds in _ordered({i.dataset for i in items}, tuple(DATASETS)):
        rows = [i for i in items if i.dataset == ds and not i.error]
        domains = _ordered({i.domain for i in rows}, DOMAINS.get(ds, ()))
        blocks = {}
        for j in judges:
            blocks[j] = _judge_block(rows, ds, domains, j, n_resamples, seed)
            by_judge[j][ds] = blocks[j].pop("_score")
        if judges:  # `score` is the first judge's
            first[ds] = by_judge[judges[0]][ds]
            domain_scores = {d: blocks[judges[0]]["domains"][d]["score"] for d in domains}
        else:  # no judge: every score is missing, and the tables say so
            first[ds] = dataset_mean(rows, "score", 0, seed)
            domain_scores = {
                d: as_json(_item_mean([i.scores.get("score") for i in rows if i.domain == d], 0, seed))
                for d in domains
            }
        datasets[ds] = {
            "score": as_json(first[ds]),
            "domains": domain_scores,
            "judges": blocks,
            "items": len([i for i in items if i.dataset == ds]),
            "errors": sum(i.error for i in items if i.dataset == ds),
            "empty_responses": int(sum(i.scores.get("empty_response_rate") or 0 for i in rows)),
        }
    return {
        "judges": judges,
        "datasets": datasets,
        "average": _average(list(first.values())),
        "judge_averages": {j: _average(list(by_judge[j].values())) for j in judges},
        "variation": _by_variation(items, n_resamples, seed),
    }


def _average(dataset_summaries: list[MetricSummary]) -> dict[str, Any] | None:
    """Table 2's Average: the unweighted mean of the dataset means."""
    usable = [s for s in dataset_summaries if s.n]
    return as_json(summarize_group(usable)) if usable else None


def _judge_block(
    rows: list[ItemScore], ds: str, domains: list[str], judge: str, n_resamples: int, seed: int
) -> dict[str, Any]:
    """One judge on one dataset: its score, each order and the position bias (dataset means over the items
    where both orders succeeded), the same per domain, and its failures."""
    block: dict[str, Any] = {}
    for name, key in ORDER_COLUMNS.items():
        summary = dataset_mean(rows, f"{key}@{judge}", n_resamples, stable_seed(seed, ds, judge, key))
        block[name] = as_json(summary)
        if name == "score":
            block["_score"] = summary  # kept (with its bootstrap draws) for this judge's Average
    block["domains"] = {
        dom: {
            name: as_json(
                _item_mean(
                    [i.scores.get(f"{key}@{judge}") for i in rows if i.domain == dom],
                    n_resamples if name == "score" else 0,
                    stable_seed(seed, ds, dom, judge, key),
                )
            )
            for name, key in ORDER_COLUMNS.items()
        }
        for dom in domains
    }
    judged = [i for i in rows if i.scores.get(f"judge_failure_rate@{judge}") is not None]
    block["judged"] = len(judged)
    block["failures"] = int(sum(i.scores[f"judge_failure_rate@{judge}"] or 0 for i in judged))
    block["out_of_range"] = int(sum(i.scores.get(f"judge_out_of_range@{judge}") or 0 for i in judged))
    return block


def _by_variation(items: list[ItemScore], n_resamples: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for factor in VARIATION_FACTORS:
        levels = sorted({str(i.variation.get(factor)) for i in items if i.variation.get(factor) is not None})
        if len(levels) < 2:
            continue
        out[factor] = {
            level: as_json(
                _item_mean(
                    [
                        i.scores.get("score")
                        for i in items
                        if not i.error and str(i.variation.get(factor)) == level
                    ],
                    n_resamples,
                    stable_seed(seed, factor, level),
                )
            )
            for level in levels
        }
    return out


# --- entry points -----------------------------------------------------------------------------------------
def model_label(results: dict[str, Any]) -> str:
    model = results.get("model") or {}
    args = model.get("model_args") or {}
    shown = [f"{k}={args[k]}" for k in ("asr", "llm", "llm_model", "model", "pretrained") if k in args]
    return f"{model.get('name', '?')}" + (f" ({', '.join(shown)})" if shown else "")


def _warn_about_failures(summary: dict[str, Any]) -> None:
    """Say on the console what the tables also show: judgments that failed and empty responses."""
    for judge in summary["judges"]:
        blocks = [b["judges"][judge] for b in summary["datasets"].values() if judge in b["judges"]]
        failed, judged = sum(b["failures"] for b in blocks), sum(b["judged"] for b in blocks)
        out_of_range = sum(b["out_of_range"] for b in blocks)
        if failed:
            log.warning(
                "ADU-Bench: judge %r failed on %d of %d samples (%d by a verdict outside its scale); those are "
                "excluded from its scores (errors in the samples' judgments.*.error)",
                judge,
                failed,
                judged,
                out_of_range,
            )
    empty = sum(b["empty_responses"] for b in summary["datasets"].values())
    if empty:
        log.warning("ADU-Bench: %d empty model responses, scored 0 (empty_response_rate)", empty)


@register("adu_bench")
def report(ctx: ReportContext) -> list[Path]:
    from audioeval.benchmarks.adu.report_plot import plot

    items = collect(ctx)
    if not items:
        return []
    summary = summarise(
        items,
        int(ctx.results.get("bootstrap_resamples", 10_000)),
        int(ctx.results.get("seed", 0)),
        list(ctx.results.get("judges") or {}),
    )
    model = model_label(ctx.results)
    summary["model"] = model
    summary["judge_endpoints"] = {
        j: {k: v for k, v in info.items() if k not in ("identity", "sampling")}
        for j, info in (ctx.results.get("judges") or {}).items()
    }
    _warn_about_failures(summary)
    png = plot(summary, model, ctx.run_dir / "adu_bench_domains.png")
    md = ctx.run_dir / "adu_bench_report.md"
    md.write_text(markdown(summary, model, png.name), encoding="utf-8")
    js = ctx.run_dir / REPORT_JSON
    js.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return [md, js, png]


def combine(run_dirs: list[Path]) -> str:
    """Table 2 with one row per run folder and judge (each folder must hold adu_bench_report.json)."""
    summaries = []
    for run in run_dirs:
        path = Path(run) / REPORT_JSON
        if not path.is_file():
            raise UsageError(
                f"{run}: no {REPORT_JSON}; pass run folders of ADU-Bench runs (--output_path/<model>/<time>)."
            )
        summary = json.loads(path.read_text(encoding="utf-8"))
        summaries.append((summary.get("model", str(run)), summary))
    return "\n".join(table2(summaries))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m audioeval.benchmarks.adu.report",
        description="ADU-Bench Table 2 across several runs (one row per run and judge).",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        print(combine(args.run_dirs))
    except UsageError as err:
        print(f"audioeval: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
