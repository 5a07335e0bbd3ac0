"""The ADU-Bench report: the numbers of the paper's Table 2 (mean judge score per dataset and their average,
one row per judge), Figure 2 and Tables 11-22 (per domain, both orders and each order), Tables 9/10 and
Figure 3(c) (each judge's two orders and its position bias), with 95% bootstrap CIs, the n behind every
number, and counts of empty responses, model errors and judge failures (out-of-range verdicts among them).

It only formats the run's record (results.json, typed). Each ADU-Bench task (found by its `metadata: {adu_bench: {dataset: ...}}`)
is one dataset: its means are `results[task]` (the paper's arithmetic is the task's declared
`stratified_mean` over domains, `audioeval.benchmarks.adu_bench.domains.domain_weight`), its domains are the task's `domain`
facet, Table 2's Average is the `adu_bench` group (`score` and `score@<judge>`), and the variation breakdown
is that group's `variation.*` facets (per level, the plain mean over the items of all datasets). A
judge's two orders and its position bias are over the same items: those where both orders succeeded (the
metric leaves the others empty).

A model that answers in speech is scored on the text its spoken answers were turned into (results.json
`speech`: by default the run's ASR, as the paper converts audio responses into text); the report names that
ASR in the model's label and adds a spoken-answer table per dataset (text-speech WER between the model's
own transcript and the ASR of its audio, answer duration, time to first audio, real-time factor).

Written into the run folder as adu_bench_report.md, adu_bench_report.json and adu_bench_domains.png.
`python -m audioeval.benchmarks.adu_bench.report RUN_DIR [RUN_DIR ...]` prints Table 2 with one row per run and judge.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from audioeval.benchmarks.adu_bench.domains import DATASETS, DOMAINS
from audioeval.benchmarks.adu_bench.report_text import markdown, table2
from audioeval.errors import UsageError
from audioeval.results.blocks import FacetBlocks, PerK, ShotBlock
from audioeval.results.record import RunRecord
from audioeval.results.reports import ReportContext, benchmark_tasks, imports_ahead, register

log = logging.getLogger("audioeval")
BENCHMARK = "adu_bench"  # the tasks' metadata block
VARIATION = "variation."  # the facets of voice variation factors (tasks/adu_bench/_adu_base.yaml)
REPORT_JSON = "adu_bench_report.json"
# the spoken-answer metrics the core adds beside the task's own (audioeval.results.spoken_metrics)
SPOKEN_COLUMNS = {
    "wer": "spoken_text_wer",
    "seconds": "spoken_seconds",
    "time_to_first_audio_s": "spoken_time_to_first_audio_s",
    "real_time_factor": "spoken_real_time_factor",
}
# per judge: the column of results (per sample) behind each reported number
ORDER_COLUMNS = {
    "score": "score",
    "ref_first": "score_ref_first",
    "resp_first": "score_resp_first",
    "position_bias": "position_bias",
}
Block = ShotBlock  # one `<k>-shot` block of results.json (a task's, a group's or a facet value's)


def _num(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _shot_block(per_k: PerK | None) -> Block | None:
    """ADU-Bench is zero-shot: the one `<k>-shot` block."""
    return next(iter((per_k or {}).values()), None)


def as_json(block: Block | None, name: str) -> dict[str, Any]:
    """Metric `name` of a task or facet block: mean, CI, items scored (n) and items without a score among
    those the model answered (missing)."""
    if block is None:
        return {"mean": None, "ci95": [None, None], "n": 0, "missing": 0}
    stats = block.get(name)
    if stats is None:  # no sample had this column
        return {"mean": None, "ci95": [None, None], "n": 0, "missing": block.n - block.errors}
    ci = stats.ci95 or (None, None)
    return {
        "mean": _num(stats.value),
        "ci95": [_num(ci[0]), _num(ci[1])],
        "n": block.n - stats.missing,
        "missing": stats.missing - block.errors,
    }


def _count(block: Block, name: str) -> tuple[int, int]:
    """(items with a value of the 0/1 column `name`, how many of them are 1)."""
    n = as_json(block, name)["n"]
    value = block.value(name)
    return n, round(value * n) if n and value is not None else 0  # the unrounded mean: exact for any n


def judge_ids(record: RunRecord, tasks: list[str]) -> list[str]:
    """The judges that scored something, in the order they were given (else first seen)."""
    seen: list[str] = []
    for task in tasks:
        block = _shot_block(record.sections.results.get(task))
        for key in block.metrics if block else []:
            if key.startswith("score@") and key[6:] not in seen:
                seen.append(key[6:])
    given = list(record.judges or {})
    return [j for j in given if j in seen] + [j for j in seen if j not in given]


def _ordered(names: set[str], canonical: tuple[str, ...]) -> list[str]:
    return [n for n in canonical if n in names] + sorted(names - set(canonical))


def _covering(record: RunRecord, tasks: list[str]) -> tuple[Block | None, FacetBlocks]:
    """The zero-shot block and the facets of the group made of exactly these tasks (Table 2's Average);
    with one task and no such group, that task's own (the mean of one dataset mean is that mean)."""
    sections = record.sections
    for name, per_k in sections.groups.items():
        block = _shot_block(per_k)
        if block is not None and set(block.subtasks or []) == set(tasks):
            return block, sections.facets.get(name) or {}
    if len(tasks) == 1:
        return _shot_block(sections.results.get(tasks[0])), sections.facets.get(tasks[0]) or {}
    return None, {}


def summarise(record: RunRecord) -> dict[str, Any] | None:
    """The report's numbers, read from the run's record; None when the run has no ADU-Bench task."""
    found = {str(info.get("dataset")): task for task, info in benchmark_tasks(record, BENCHMARK)}
    if not found:
        return None
    tasks = [found[ds] for ds in _ordered(set(found), tuple(DATASETS))]
    judges = judge_ids(record, tasks)
    datasets: dict[str, Any] = {}
    for ds in _ordered(set(found), tuple(DATASETS)):
        task = found[ds]
        block = _shot_block(record.sections.results.get(task)) or ShotBlock({}, 0)
        by_domain = (record.sections.facets.get(task) or {}).get("domain") or {}
        domain_blocks = {d: _shot_block(per_k) for d, per_k in by_domain.items()}
        answered = {d for d, b in domain_blocks.items() if b and b.n > b.errors}
        domains = {d: domain_blocks[d] for d in _ordered(answered, DOMAINS.get(ds, ()))}
        blocks = {j: _judge_block(block, domains, j) for j in judges}
        scores = {
            d: blocks[judges[0]]["domains"][d]["score"] if judges else as_json(b, "score")
            for d, b in domains.items()
        }
        datasets[ds] = {
            "score": as_json(block, "score"),
            "domains": scores,
            "judges": blocks,
            "items": block.n,
            "errors": block.errors,
            "empty_responses": _count(block, "empty_response_rate")[1],
        }
    group, facets = _covering(record, tasks)
    return {
        "judges": judges,
        "datasets": datasets,
        "average": _average(group, datasets, "score", None),
        "judge_averages": {j: _average(group, datasets, f"score@{j}", j) for j in judges},
        "variation": _by_variation(facets),
        "spoken": _spoken(record, found),
    }


def _spoken(record: RunRecord, found: dict[str, str]) -> dict[str, Any] | None:
    """The spoken-answer rows: which ASR heard the answers, which text was scored, per dataset the metrics."""
    speech = record.speech
    if not speech:
        return None
    per_dataset = {}
    for ds in _ordered(set(found), tuple(DATASETS)):
        block = _shot_block(record.sections.results.get(found[ds]))
        per_dataset[ds] = {name: as_json(block, column) for name, column in SPOKEN_COLUMNS.items()}
    return {
        "asr": asr_label(speech),
        "spoken_text": speech.get("spoken_text"),
        "note": speech.get("note"),
        "datasets": per_dataset,
    }


def _average(
    group: Block | None, datasets: dict[str, Any], name: str, judge: str | None
) -> dict[str, Any] | None:
    """Table 2's Average (the group's unweighted mean of the dataset means), with the items behind it."""
    stats = group.get(name) if group is not None else None
    if stats is None or stats.value is None:
        return None
    cells = [b["judges"][judge]["score"] if judge else b["score"] for b in datasets.values()]
    ci = stats.ci95 or (None, None)
    return {
        "mean": _num(stats.value),
        "ci95": [_num(ci[0]), _num(ci[1])],
        "n": sum(c["n"] for c in cells),
        "missing": sum(c["missing"] for c in cells),
    }


def _judge_block(block: Block, domains: dict[str, Block | None], judge: str) -> dict[str, Any]:
    """One judge on one dataset: its score, each order and the position bias, the same per domain, and its
    failures."""
    out: dict[str, Any] = {name: as_json(block, f"{key}@{judge}") for name, key in ORDER_COLUMNS.items()}
    out["domains"] = {
        d: {name: as_json(b, f"{key}@{judge}") for name, key in ORDER_COLUMNS.items()}
        for d, b in domains.items()
    }
    out["judged"], out["failures"] = _count(block, f"judge_failure_rate@{judge}")
    out["out_of_range"] = _count(block, f"judge_out_of_range@{judge}")[1]
    return out


def _by_variation(facets: FacetBlocks) -> dict[str, Any]:
    """Per variation factor the tasks declare as a facet (in their order) with two levels or more: each
    level's score over the items of every dataset (the adu_bench group's facets, pooled)."""
    out: dict[str, Any] = {}
    for facet, levels in facets.items():
        if facet.startswith(VARIATION) and len(levels) >= 2:
            out[facet[len(VARIATION) :]] = {
                level: as_json(_shot_block(per_k), "score") for level, per_k in levels.items()
            }
    return out


# --- entry points -----------------------------------------------------------------------------------------
def asr_label(speech: dict[str, Any]) -> str:
    """The ASR and the model it ran, e.g. `openai (whisper-1)`."""
    asr, model = speech.get("asr"), speech.get("asr_model")
    return f"{asr} ({model})" if model else str(asr)


def model_label(record: RunRecord) -> str:
    args = record.model.model_args
    keys = ("asr", "llm", "llm_model", "text_model", "model", "pretrained")
    shown = [f"{k}={args[k]}" for k in keys if k in args]
    label = record.model.name + (f" ({', '.join(shown)})" if shown else "")
    speech = record.speech
    if speech:  # a spoken answer is scored on a text: say which
        scored = f"ASR {asr_label(speech)}" if speech.get("spoken_text") == "asr" else "its own transcript"
        label += f" [spoken; scored: {scored}]"
    return label


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
@imports_ahead("matplotlib.figure", "matplotlib.patches", "audioeval.benchmarks.adu_bench.report_plot")
def report(ctx: ReportContext) -> list[Path]:
    from audioeval.benchmarks.adu_bench.report_plot import plot

    summary = summarise(ctx.record)
    if summary is None:
        return []
    model = model_label(ctx.record)
    summary["model"] = model
    summary["judge_endpoints"] = {
        j: {k: v for k, v in info.items() if k not in ("identity", "sampling")}
        for j, info in (ctx.record.judges or {}).items()
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
        prog="python -m audioeval.benchmarks.adu_bench.report",
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
