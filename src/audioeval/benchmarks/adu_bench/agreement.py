"""Agreement between the LLM judges and human pairwise preferences (the paper's Table 3).

Humans compared two models' responses to the same queries and said "A is better", "B is better" or "both
are equal". The judges' scores of the same responses (from two runs' samples files) become the same kind of
preference: A when score_A - score_B > tie_margin, B when it is < -tie_margin, equal otherwise. The
agreement is the share of human judgments the judge preference matches, per dataset and overall, with a
95% bootstrap CI.

    python -m audioeval.benchmarks.adu_bench.agreement --samples_a RUN_A --samples_b RUN_B --human prefs.jsonl

RUN_A / RUN_B: run folders (their samples_adu_*.jsonl are read; run with --log_samples) or samples files.
prefs.jsonl, one human judgment per line: {"id": "<episode_id from the samples>", "preference": "A"}; an
optional "annotator" is kept. Several lines per id (several annotators) each count once. Items the judges
could not score in either run (judge failure, model error) are left out and counted.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audioeval.benchmarks.adu_bench.domains import DATASETS
from audioeval.benchmarks.adu_bench.jsonl import read_jsonl
from audioeval.errors import AudioEvalError, DataError, UsageError, close_matches
from audioeval.results.stats import Aggregation, summarize
from audioeval.seeds import stable_seed

PREFERENCES = {
    "a": "A",
    "a is better": "A",
    "model a": "A",
    "b": "B",
    "b is better": "B",
    "model b": "B",
    "equal": "equal",
    "tie": "equal",
    "same": "equal",
    "both are equal": "equal",
    "both equal": "equal",
}


@dataclass(frozen=True)
class HumanJudgment:
    item: str
    preference: str  # A, B or equal
    annotator: str | None
    where: str


def read_human(path: Path) -> list[HumanJudgment]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"--human {path}: no such file.")
    out = []
    for where, obj in read_jsonl(path):
        if not isinstance(obj, dict):
            raise DataError(f'{where}: expected a JSON object such as {{"id": ..., "preference": "A"}}.')
        unknown = set(obj) - {"id", "preference", "annotator"}
        if unknown:
            raise DataError(f"{where}: unknown field(s) {sorted(unknown)}; use id, preference and annotator.")
        item, pref = obj.get("id"), obj.get("preference")
        if not isinstance(item, str) or not item:
            raise DataError(f'{where}: `id` must be the episode_id of a sample (e.g. "skill/skill-law-02").')
        normal = PREFERENCES.get(str(pref).strip().lower()) if isinstance(pref, str) else None
        if normal is None:
            raise DataError(
                f"{where}: preference {pref!r} must be A, B or equal (or 'A is better', 'tie', ...)."
            )
        annotator = obj.get("annotator")
        out.append(HumanJudgment(item, normal, None if annotator is None else str(annotator), where))
    if not out:
        raise DataError(f"--human {path}: the file holds no judgments.")
    return out


def _samples_files(spec: Path) -> list[Path]:
    if spec.is_dir():
        files = sorted(spec.glob("samples_adu_*.jsonl"))
        if not files:
            raise UsageError(
                f"{spec}: no samples_adu_*.jsonl; run ADU-Bench with --log_samples --output_path."
            )
        return files
    if not spec.is_file():
        raise UsageError(f"{spec}: no such samples file or run folder.")
    return [spec]


def read_scores(specs: list[Path], key: str) -> dict[str, tuple[str, float | None]]:
    """episode_id -> (dataset, judge score or None) from samples files or run folders."""
    out: dict[str, tuple[str, float | None]] = {}
    for spec in specs:
        for path in _samples_files(Path(spec)):
            for where, record in read_jsonl(path):
                item = record.get("episode_id") if isinstance(record, dict) else None
                if not isinstance(item, str):
                    raise DataError(
                        f"{where}: not a samples record (no episode_id); pass samples_adu_*.jsonl files."
                    )
                dataset = str(record.get("task", "")).removeprefix("adu_") or item.split("/", 1)[0]
                score = (record.get("scores") or {}).get(key)
                out[item] = (dataset, None if record.get("error") else score)
    return out


def judge_preference(score_a: float, score_b: float, tie_margin: float) -> str:
    diff = score_a - score_b
    return "A" if diff > tie_margin else "B" if diff < -tie_margin else "equal"


def agreement(
    human: list[HumanJudgment],
    scores_a: dict[str, tuple[str, float | None]],
    scores_b: dict[str, tuple[str, float | None]],
    tie_margin: float = 0.0,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per dataset and overall: agreement share with CI, counts, and the confusion of human vs judge."""
    matches: dict[str, list[float]] = {}
    unscorable: dict[str, int] = {}
    confusion: dict[str, dict[str, int]] = {
        h: {j: 0 for j in ("A", "B", "equal")} for h in ("A", "B", "equal")
    }
    for h in human:
        for run, scores in (("A", scores_a), ("B", scores_b)):
            if h.item not in scores:
                hints = close_matches(h.item, scores)
                hint = f" Did you mean {', '.join(hints)}?" if hints else ""
                raise DataError(f"{h.where}: id {h.item!r} is not in the samples of run {run}.{hint}")
        dataset, a = scores_a[h.item]
        _, b = scores_b[h.item]
        if a is None or b is None:
            unscorable[dataset] = unscorable.get(dataset, 0) + 1
            continue
        predicted = judge_preference(float(a), float(b), tie_margin)
        confusion[h.preference][predicted] += 1
        matches.setdefault(dataset, []).append(float(predicted == h.preference))
    rows: dict[str, Any] = {}
    datasets = [d for d in DATASETS if d in matches or d in unscorable]
    datasets += sorted((set(matches) | set(unscorable)) - set(datasets))
    for name, values in [(d, matches.get(d, [])) for d in datasets] + [
        ("all", [v for d in datasets for v in matches.get(d, [])])
    ]:
        agg = Aggregation("mean", ("x",))
        s = summarize({"x": np.array(values, dtype=np.float64)}, agg, n_resamples, stable_seed(seed, name))
        rows[name] = {
            "agreement": None if not values else round(s.value, 4),
            "ci95": [round(x, 4) for x in s.ci95] if values and s.has_ci else None,  # None: not measured
            "n": len(values),
            "unscorable": sum(unscorable.values()) if name == "all" else unscorable.get(name, 0),
        }
    return {"datasets": rows, "confusion": confusion, "tie_margin": tie_margin}


def markdown(result: dict[str, Any], label_a: str, label_b: str) -> str:
    lines = [f"| dataset | {label_a} vs {label_b} | 95% CI | n | unscorable |", "|---|---|---|---|---|"]
    for name, row in result["datasets"].items():
        title = "ADU-Bench" if name == "all" else DATASETS.get(name, name)
        if row["agreement"] is None:
            lines.append(f"| {title} | — | — | 0 | {row['unscorable']} |")
            continue
        ci = "—" if row["ci95"] is None else "[{:.1f}%, {:.1f}%]".format(*(100 * x for x in row["ci95"]))
        lines.append(f"| {title} | {100 * row['agreement']:.1f}% | {ci} | {row['n']} | {row['unscorable']} |")
    lines += ["", "human \\ judge | A | B | equal", "---|---|---|---"]
    for h, counts in result["confusion"].items():
        lines.append(f"{h} | {counts['A']} | {counts['B']} | {counts['equal']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m audioeval.benchmarks.adu_bench.agreement",
        description="Agreement of LLM-judge preferences with human pairwise preferences (ADU-Bench Table 3).",
    )
    p.add_argument(
        "--samples_a", required=True, nargs="+", type=Path, help="run folder(s) or samples file(s) of model A"
    )
    p.add_argument(
        "--samples_b", required=True, nargs="+", type=Path, help="run folder(s) or samples file(s) of model B"
    )
    p.add_argument(
        "--human", required=True, type=Path, help="JSONL of {id, preference: A|B|equal[, annotator]}"
    )
    p.add_argument(
        "--judge", help="use this judge's score (score@JUDGE) instead of the first judge's (score)"
    )
    p.add_argument(
        "--tie_margin", type=float, default=0.0, help="score differences up to this count as equal"
    )
    p.add_argument("--label_a", default="A")
    p.add_argument("--label_b", default="B")
    p.add_argument("--bootstrap_iters", type=int, default=10_000)
    p.add_argument("--output", type=Path, help="also write the result as JSON here")
    args = p.parse_args(argv)
    try:
        if args.tie_margin < 0:
            raise UsageError("--tie_margin must be 0 or more.")
        key = f"score@{args.judge}" if args.judge else "score"
        human = read_human(args.human)
        scores_a, scores_b = read_scores(args.samples_a, key), read_scores(args.samples_b, key)
        if args.judge and not any(s is not None for _, s in scores_a.values()):
            raise UsageError(f"--judge {args.judge}: the samples of run A hold no {key!r} scores.")
        result = agreement(human, scores_a, scores_b, args.tie_margin, args.bootstrap_iters)
    except AudioEvalError as err:
        print(f"audioeval: error: {err}", file=sys.stderr)
        return 2
    print(markdown(result, args.label_a, args.label_b))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
