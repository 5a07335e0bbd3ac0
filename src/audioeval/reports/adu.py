"""The ADU-Bench report: the shape of the paper's Table 2 (mean judge score per dataset and their average),
Figure 2 (per domain), Tables 9/10 and Figure 3(c) (each judge's two orders and its position bias), with 95%
bootstrap CIs over items, plus counts of empty responses, model errors and judge failures, and a bar plot.

Written into the run folder as adu_bench_report.md, adu_bench_report.json and adu_bench_domains.png.
`python -m audioeval.reports.adu RUN_DIR [RUN_DIR ...]` prints Table 2 with one row per run (model).
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

from audioeval.adu.domains import DATASETS, DOMAINS, domain_label
from audioeval.errors import UsageError
from audioeval.reports import ReportContext
from audioeval.stats import Aggregation, MetricSummary, stable_seed, summarize, summarize_group

log = logging.getLogger("audioeval")
BUILDER = "adu_bench"
VARIATION_FACTORS = ("gender", "speaker", "rate", "pitch", "volume")
REPORT_JSON = "adu_bench_report.json"


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


def _summary(values: list[float | None], n_resamples: int, seed: int) -> MetricSummary:
    column = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return summarize({"x": column}, Aggregation("mean", ("x",)), n_resamples, seed)


def _as_json(s: MetricSummary) -> dict[str, Any]:
    return {"mean": _num(s.value), "ci95": [_num(x) for x in s.ci95], "n": s.n, "missing": s.missing}


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def judge_ids(items: list[ItemScore]) -> list[str]:
    return sorted({k.split("@", 1)[1] for i in items for k in i.scores if k.startswith("score@")})


def _ordered(names: set[str], canonical: tuple[str, ...]) -> list[str]:
    return [n for n in canonical if n in names] + sorted(names - set(canonical))


def summarise(items: list[ItemScore], n_resamples: int, seed: int) -> dict[str, Any]:
    judges = judge_ids(items)
    datasets: dict[str, Any] = {}
    dataset_summaries: dict[str, MetricSummary] = {}
    for ds in _ordered({i.dataset for i in items}, tuple(DATASETS)):
        rows = [i for i in items if i.dataset == ds and not i.error]
        overall = _summary([i.scores.get("score") for i in rows], n_resamples, stable_seed(seed, ds))
        dataset_summaries[ds] = overall
        domains = {}
        for dom in _ordered({i.domain for i in rows}, DOMAINS.get(ds, ())):
            values = [i.scores.get("score") for i in rows if i.domain == dom]
            domains[dom] = _as_json(_summary(values, n_resamples, stable_seed(seed, ds, dom)))
        per_judge = {j: _judge_block(rows, ds, j, n_resamples, seed) for j in judges}
        datasets[ds] = {
            "score": _as_json(overall),
            "domains": domains,
            "judges": per_judge,
            "items": len([i for i in items if i.dataset == ds]),
            "errors": sum(i.error for i in items if i.dataset == ds),
            "empty_responses": int(sum(i.scores.get("empty_response_rate") or 0 for i in rows)),
            "judge_failures": int(sum(i.scores.get("judge_failure_rate") or 0 for i in rows)),
        }
    usable = [s for s in dataset_summaries.values() if s.n]
    average = _as_json(summarize_group(usable)) if usable else None
    return {
        "judges": judges,
        "datasets": datasets,
        "average": average,
        "variation": _by_variation(items, n_resamples, seed),
    }


def _judge_block(rows: list[ItemScore], ds: str, judge: str, n_resamples: int, seed: int) -> dict[str, Any]:
    """One judge on one dataset: its score, each order, the position bias and its failures."""

    def column(key: str, resamples: int) -> dict[str, Any]:
        values = [i.scores.get(f"{key}@{judge}") for i in rows]
        return _as_json(_summary(values, resamples, stable_seed(seed, ds, judge, key)))

    judged = [i for i in rows if i.scores.get(f"judge_failure_rate@{judge}") is not None]
    return {
        "score": column("score", n_resamples),
        "ref_first": column("score_ref_first", 0),
        "resp_first": column("score_resp_first", 0),
        "position_bias": column("position_bias", n_resamples),
        "judged": len(judged),
        "failures": int(sum(i.scores[f"judge_failure_rate@{judge}"] or 0 for i in judged)),
    }


def _by_variation(items: list[ItemScore], n_resamples: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for factor in VARIATION_FACTORS:
        levels = sorted({str(i.variation.get(factor)) for i in items if i.variation.get(factor) is not None})
        if len(levels) < 2:
            continue
        out[factor] = {
            level: _as_json(
                _summary(
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


# --- text -----------------------------------------------------------------------------------------------------
def _cell(s: dict[str, Any] | None) -> str:
    if not s or s.get("mean") is None:
        return "—"
    lo, hi = s["ci95"]
    ci = (
        f" [{lo:.2f}, {hi:.2f}]"
        if lo is not None and hi is not None and (lo, hi) != (s["mean"], s["mean"])
        else ""
    )
    return f"{s['mean']:.2f}{ci}"


def table2_header(datasets: list[str]) -> list[str]:
    names = [DATASETS[d].split("-", 1)[1] if d in DATASETS else d for d in datasets]
    return ["| model | " + " | ".join(names) + " | Average |", "|---" * (len(datasets) + 2) + "|"]


def table2_row(model: str, summary: dict[str, Any], datasets: list[str]) -> str:
    cells = [_cell(summary["datasets"].get(d, {}).get("score")) for d in datasets]
    return f"| {model} | " + " | ".join(cells) + f" | {_cell(summary.get('average'))} |"


def markdown(summary: dict[str, Any], model: str, png: str | None) -> str:
    datasets = list(summary["datasets"])
    lines = [f"# ADU-Bench report: {model}", ""]
    lines += ["Mean judge score (0-10, both orders averaged) with 95% bootstrap CIs over items.", ""]
    lines += (
        ["## Datasets (Table 2)", ""] + table2_header(datasets) + [table2_row(model, summary, datasets), ""]
    )
    for ds, block in summary["datasets"].items():
        lines += [
            f"## {DATASETS.get(ds, ds)} by domain (Figure 2)",
            "",
            "| domain | score | n |",
            "|---|---|---|",
        ]
        lines += [f"| {domain_label(d)} | {_cell(s)} | {s['n']} |" for d, s in block["domains"].items()]
        lines += [""]
    lines += _judge_lines(summary)
    lines += _endpoint_lines(summary.get("judge_endpoints") or {})
    lines += ["## Counts", "", "| dataset | items | model errors | empty responses | judge failures |"]
    lines += ["|---|---|---|---|---|"]
    for ds, b in summary["datasets"].items():
        lines.append(
            f"| {DATASETS.get(ds, ds)} | {b['items']} | {b['errors']} | {b['empty_responses']} | {b['judge_failures']} |"
        )
    lines += [
        "",
        "Empty responses score 0 without a judge call. Judge failures (API errors, replies without a number) and "
        "model errors are excluded from the means.",
        "",
    ]
    if summary["variation"]:
        lines += ["## By variation (all datasets)", "", "| factor | level | score | n |", "|---|---|---|---|"]
        for factor, levels in summary["variation"].items():
            lines += [f"| {factor} | {level} | {_cell(s)} | {s['n']} |" for level, s in levels.items()]
        lines += [""]
    if png:
        lines += [f"![scores per domain]({png})", ""]
    return "\n".join(lines)


def _judge_lines(summary: dict[str, Any]) -> list[str]:
    if not summary["judges"]:
        return ["## Judges", "", "No judge was configured (pass --judge): there are no scores.", ""]
    lines = ["## Judges and position bias (Tables 9/10, Figure 3c)", ""]
    lines += [
        "| judge | dataset | score | reference first | response first | position bias (resp − ref) | failures |",
        "|---|---|---|---|---|---|---|",
    ]
    for j in summary["judges"]:
        for ds, block in summary["datasets"].items():
            b = block["judges"].get(j)
            if not b:
                continue
            fails = f"{b['failures']}/{b['judged']}"
            lines.append(
                f"| {j} | {DATASETS.get(ds, ds)} | {_cell(b['score'])} | {_cell(b['ref_first'])} | "
                f"{_cell(b['resp_first'])} | {_cell(b['position_bias'])} | {fails} |"
            )
    return lines + [""]


def _endpoint_lines(judges: dict[str, Any]) -> list[str]:
    """What each judge endpoint cost: requests, retries, rate limits, server errors (results.json `judges`)."""
    if not judges:
        return []
    lines = [
        "## Judge endpoints",
        "",
        "| judge | requests | retries | HTTP 429 | HTTP 5xx | timeouts | failed verdicts |",
    ]
    lines += ["|---|---|---|---|---|---|---|"]
    for j, info in judges.items():
        cells = [
            info.get(k, 0)
            for k in ("requests_sent", "retries", "http_429", "http_5xx", "timeouts", "failed_verdicts")
        ]
        lines.append(f"| {j} | " + " | ".join(str(c) for c in cells) + " |")
    return lines + [""]


# --- plot -----------------------------------------------------------------------------------------------------
def plot(summary: dict[str, Any], model: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = [d for d, b in summary["datasets"].items() if b["domains"]]
    fig, axes = plt.subplots(
        1, max(1, len(datasets)), figsize=(4.2 * max(1, len(datasets)), 4.2), squeeze=False
    )
    for ax, ds in zip(axes[0], datasets, strict=False):
        domains = summary["datasets"][ds]["domains"]
        names = list(domains)
        means = [domains[d]["mean"] if domains[d]["mean"] is not None else np.nan for d in names]
        lo = [
            m - (domains[d]["ci95"][0] if domains[d]["ci95"][0] is not None else m)
            for d, m in zip(names, means, strict=True)
        ]
        hi = [
            (domains[d]["ci95"][1] if domains[d]["ci95"][1] is not None else m) - m
            for d, m in zip(names, means, strict=True)
        ]
        x = np.arange(len(names))
        ax.bar(x, means, yerr=[lo, hi], capsize=3, color="#4C72B0")
        overall = summary["datasets"][ds]["score"]["mean"]
        if overall is not None:
            ax.axhline(overall, color="#DD8452", linestyle="--", linewidth=1, label=f"mean {overall:.2f}")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xticks(x, [domain_label(n) for n in names], rotation=60, ha="right", fontsize=8)
        ax.set_ylim(0, 10)
        ax.set_title(DATASETS.get(ds, ds))
        ax.set_ylabel("judge score (0-10)")
    fig.suptitle(f"ADU-Bench per domain: {model}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
        if failed:
            log.warning(
                "ADU-Bench: judge %r failed on %d of %d samples; those are excluded from its scores "
                "(errors in the samples' judgments.*.error)",
                judge,
                failed,
                judged,
            )
    empty = sum(b["empty_responses"] for b in summary["datasets"].values())
    if empty:
        log.warning("ADU-Bench: %d empty model responses, scored 0 (empty_response_rate)", empty)


def report(ctx: ReportContext) -> list[Path]:
    items = collect(ctx)
    if not items:
        return []
    summary = summarise(
        items, int(ctx.results.get("bootstrap_resamples", 10_000)), int(ctx.results.get("seed", 0))
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
    """Table 2 with one row per run folder (each must hold adu_bench_report.json)."""
    summaries = []
    for run in run_dirs:
        path = Path(run) / REPORT_JSON
        if not path.is_file():
            raise UsageError(
                f"{run}: no {REPORT_JSON}; pass run folders of ADU-Bench runs (--output_path/<model>/<time>)."
            )
        summaries.append(json.loads(path.read_text(encoding="utf-8")))
    datasets = [d for d in DATASETS if any(d in s["datasets"] for s in summaries)]
    lines = table2_header(datasets)
    lines += [
        table2_row(s.get("model", str(run)), s, datasets) for s, run in zip(summaries, run_dirs, strict=True)
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m audioeval.reports.adu",
        description="ADU-Bench Table 2 across several runs (one row each).",
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
