"""The ADU-Bench report as Markdown: Table 2 (one row per model and judge, every cell with its n and judge
failures), each judge's two orders and position bias (Tables 9/10), per-domain scores in both orders and
each order (Figure 2, Tables 11-22), counts and the variation breakdown. Reads the summary that
`audioeval.benchmarks.adu_bench.report.summarise` builds."""

from __future__ import annotations

from typing import Any

from audioeval.benchmarks.adu_bench.domains import DATASETS, domain_label

# the paper's per-domain tables of each dataset (reference first, then response first)
PAPER_DOMAIN_TABLES = {
    "general": "Tables 11–12",
    "skill": "Tables 13–16",
    "multilingual": "Tables 17–20",
    "ambiguity": "Tables 21–22",
}
NO_SCORE = "—"


def cell(s: dict[str, Any] | None) -> str:
    """`mean [lo, hi]` (no CI when there is none), or a dash when nothing was scored."""
    if not s or s.get("mean") is None:
        return NO_SCORE
    lo, hi = s["ci95"]
    ci = (
        f" [{lo:.2f}, {hi:.2f}]"
        if lo is not None and hi is not None and (lo, hi) != (s["mean"], s["mean"])
        else ""
    )
    return f"{s['mean']:.2f}{ci}"


def cell_n(s: dict[str, Any] | None) -> str:
    """A cell with the number of items behind it."""
    return f"{cell(s)} (n={(s or {}).get('n', 0)})"


def _dataset_name(ds: str) -> str:
    return DATASETS[ds].split("-", 1)[1] if ds in DATASETS else ds


def table2(summaries: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Table 2 for (model, summary) pairs: one row per model and judge (judges are never averaged); each
    cell is the dataset mean with its CI, the items scored and the judge failures left out."""
    datasets = [d for d in DATASETS if any(d in s["datasets"] for _, s in summaries)]
    datasets += sorted({d for _, s in summaries for d in s["datasets"]} - set(datasets))
    lines = [
        "| model | judge | " + " | ".join(_dataset_name(d) for d in datasets) + " | Average |",
        "|---" * (len(datasets) + 3) + "|",
    ]
    for model, summary in summaries:
        for judge in summary["judges"] or [None]:
            cells, n, failed = [], 0, 0
            for ds in datasets:
                block = (summary["datasets"].get(ds) or {}).get("judges", {}).get(judge) if judge else None
                if block is None:
                    cells.append(NO_SCORE)
                    continue
                n, failed = n + block["score"]["n"], failed + block["failures"]
                cells.append(f"{cell(block['score'])} (n={block['score']['n']}; {block['failures']} failed)")
            average = summary.get("judge_averages", {}).get(judge) if judge else None
            average_cell = f"{cell(average)} (n={n}; {failed} failed)" if judge else NO_SCORE
            lines.append(f"| {model} | {judge or NO_SCORE} | " + " | ".join(cells) + f" | {average_cell} |")
    return lines


def markdown(summary: dict[str, Any], model: str, png: str | None) -> str:
    lines = [f"# ADU-Bench report: {model}", ""]
    lines += [
        "Mean judge score (0-10, both orders averaged) with 95% bootstrap CIs. n = items scored; failed = "
        "judge failures (API errors, replies without a number, numbers outside the scale), left out of the "
        "means, never scored. A dataset's mean combines its domain means as the paper does (ADU-Ambiguity: "
        "the plain mean of its four types; ADU-Skill: skills weighted by their size in the paper's Table 8; "
        "General and Multilingual: equal-sized domains). Each judge is reported on its own.",
        "",
        "## Datasets (Table 2)",
        "",
        *table2([(model, summary)]),
        "",
    ]
    lines += _judge_lines(summary)
    lines += _endpoint_lines(summary.get("judge_endpoints") or {})
    lines += _domain_lines(summary)
    lines += _count_lines(summary)
    lines += _spoken_lines(summary.get("spoken"))
    if summary["variation"]:
        lines += ["## By variation (all datasets)", "", "| factor | level | score | n |", "|---|---|---|---|"]
        for factor, levels in summary["variation"].items():
            lines += [f"| {factor} | {level} | {cell(s)} | {s['n']} |" for level, s in levels.items()]
        lines += [""]
    if png:
        lines += [f"![scores per domain]({png})", ""]
    return "\n".join(lines)


def _failures(block: dict[str, Any]) -> str:
    text = f"{block['failures']}/{block['judged']}"
    return text + (f" ({block['out_of_range']} out of range)" if block["out_of_range"] else "")


def _judge_lines(summary: dict[str, Any]) -> list[str]:
    if not summary["judges"]:
        return ["## Judges", "", "No judge was configured (pass --judge): there are no scores.", ""]
    lines = [
        "## Judges: each order and the position bias (Tables 9/10, Figure 3c)",
        "",
        "Reference first, response first and the bias (response first − reference first) are over the same "
        "items: those where both orders succeeded.",
        "",
        "| judge | dataset | score | reference first | response first | position bias | failures |",
        "|---|---|---|---|---|---|---|",
    ]
    for j in summary["judges"]:
        for ds, block in summary["datasets"].items():
            b = block["judges"].get(j)
            if not b:
                continue
            lines.append(
                f"| {j} | {DATASETS.get(ds, ds)} | {cell_n(b['score'])} | {cell_n(b['ref_first'])} | "
                f"{cell_n(b['resp_first'])} | {cell_n(b['position_bias'])} | {_failures(b)} |"
            )
    return lines + [""]


def _endpoint_lines(judges: dict[str, Any]) -> list[str]:
    """What each judge endpoint cost: requests, retries, rate limits, server errors (results.json `judges`)."""
    if not judges:
        return []
    keys = ("requests_sent", "retries", "http_429", "http_5xx", "timeouts", "failed_verdicts")
    lines = ["## Judge endpoints", ""]
    lines += ["| judge | requests | retries | HTTP 429 | HTTP 5xx | timeouts | failed verdicts |"]
    lines += ["|---|---|---|---|---|---|---|"]
    lines += [
        f"| {j} | " + " | ".join(str(info.get(k, 0)) for k in keys) + " |" for j, info in judges.items()
    ]
    return lines + [""]


def _domain_lines(summary: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for ds, block in summary["datasets"].items():
        tables = PAPER_DOMAIN_TABLES.get(ds)
        lines += [
            f"## {DATASETS.get(ds, ds)} by domain (Figure 2"
            + (f"; each order: {tables})" if tables else ")"),
            "",
            "| domain | judge | score | reference first | response first | position bias |",
            "|---|---|---|---|---|---|",
        ]
        for dom, scores in block["domains"].items():
            if not block["judges"]:
                lines.append(f"| {domain_label(dom)} | {NO_SCORE} | {cell_n(scores)} | | | |")
            for j, b in block["judges"].items():
                d = b["domains"][dom]
                lines.append(
                    f"| {domain_label(dom)} | {j} | {cell_n(d['score'])} | {cell_n(d['ref_first'])} | "
                    f"{cell_n(d['resp_first'])} | {cell_n(d['position_bias'])} |"
                )
        lines += [""]
    return lines


def _spoken_lines(spoken: dict[str, Any] | None) -> list[str]:
    """The spoken-answer rows: the ASR that heard the answers and, per dataset, what it heard and how fast."""
    if not spoken:
        return []
    scored = "the ASR text" if spoken["spoken_text"] == "asr" else "the model's own transcript"
    lines = [
        f"## Spoken answers (ASR: {spoken['asr']})",
        "",
        f"The model answered in speech; the judges saw {scored}. Text-speech WER: the model's own transcript "
        f"against the ASR ({spoken['asr']}) of its audio, case, punctuation and digits normalised.",
        "",
        "| dataset | ASR | text-speech WER | answer seconds | time to first audio (s) | real-time factor |",
        "|---|---|---|---|---|---|",
    ]
    for ds, b in spoken["datasets"].items():
        lines.append(
            f"| {DATASETS.get(ds, ds)} | {spoken['asr']} | {cell_n(b['wer'])} | {cell_n(b['seconds'])} | "
            f"{cell_n(b['time_to_first_audio_s'])} | {cell_n(b['real_time_factor'])} |"
        )
    if spoken.get("note"):
        lines += ["", f"Note: {spoken['note']}."]
    return lines + [""]


def _count_lines(summary: dict[str, Any]) -> list[str]:
    lines = [
        "## Counts",
        "",
        "| dataset | items | model errors | empty responses | judge | judge failures | of which out of range |",
        "|---|---|---|---|---|---|---|",
    ]
    for ds, b in summary["datasets"].items():
        head = f"| {DATASETS.get(ds, ds)} | {b['items']} | {b['errors']} | {b['empty_responses']} |"
        if not b["judges"]:
            lines.append(f"{head} {NO_SCORE} | {NO_SCORE} | {NO_SCORE} |")
        for j, jb in b["judges"].items():
            lines.append(f"{head} {j} | {jb['failures']} | {jb['out_of_range']} |")
    return lines + [
        "",
        "Empty responses score 0 in both orders without a judge call. Judge failures (API errors, replies "
        "without a number, numbers outside the scale the judge was asked for) and model errors are excluded "
        "from the means.",
        "",
    ]
