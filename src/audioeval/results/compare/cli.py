"""`audioeval compare RUN_DIR [RUN_DIR ...] [--baseline RUN_DIR] [--format ...] [--table compare|paper]
[--output FILE] [--plot FILE] [--unpaired]` (docs/compare.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from audioeval.errors import UsageError
from audioeval.kvargs import FlagParser
from audioeval.results.stats import DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from audioeval.results.compare.comparison import Comparison
    from audioeval.results.compare.paper import PaperTable

FORMATS = ("terminal", "markdown", "latex", "csv", "json")


def compare_parser() -> argparse.ArgumentParser:
    p = FlagParser(
        prog="audioeval compare",
        description="Compare runs of the same tasks: every run's value with its 95% CI and its difference to the "
        "baseline, paired over the episodes both runs saw (paired bootstrap CI; exact McNemar or sign-flip "
        "permutation p-values, Holm-corrected), as a table or the papers' multi-model tables.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (OUTPUT_PATH/<model>/<timestamp>)")
    p.add_argument(
        "--baseline", metavar="RUN_DIR", help="the run the others are compared with (default: the first)"
    )
    p.add_argument("--format", default="terminal", choices=FORMATS, help="output format (default: terminal)")
    p.add_argument(
        "--table",
        default="compare",
        choices=("compare", "paper"),
        help="compare: every task, group and pooled setting with the differences (default); paper: the "
        "multi-model tables the runs' benchmarks declare, laid out as their papers' tables",
    )
    p.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout")
    p.add_argument("--plot", metavar="FILE", help="also write a multi-model shot-scaling plot (PNG) to FILE")
    p.add_argument(
        "--unpaired",
        action="store_true",
        help="compare unpaired, from the runs' reported standard errors: for runs whose episodes differ (another "
        "--seed, --task_args, data or augmentation), which are refused for pairing otherwise",
    )
    p.add_argument(
        "--bootstrap_iters",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"resamples and permutations (default {DEFAULT_RESAMPLES})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    p.add_argument(
        "--include_path", action="append", default=[], metavar="DIR", help="task folders the runs used"
    )
    return p


def cmd_compare(argv: list[str]) -> int:
    args = compare_parser().parse_args(argv)
    if args.bootstrap_iters < 0:
        raise UsageError(f"--bootstrap_iters must not be negative, got {args.bootstrap_iters}.")
    paths, baseline = _run_paths(args.runs, args.baseline)
    text = render(paths, baseline, args)
    if args.output:
        Path(args.output).expanduser().write_text(text, encoding="utf-8")
        print(f"audioeval compare: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _run_paths(runs: list[str], baseline: str | None) -> tuple[list[str], int]:
    """The run folders in order (the baseline first when given apart) and the baseline's index."""
    paths = list(runs)
    index = 0
    if baseline is not None:
        wanted = Path(baseline).expanduser().resolve()
        found = [i for i, p in enumerate(paths) if Path(p).expanduser().resolve() == wanted]
        if found:
            index = found[0]
        else:
            paths.insert(0, baseline)
    if len(paths) < 2:
        raise UsageError(
            "compare needs at least two run folders (or one and --baseline RUN_DIR), e.g. `audioeval compare "
            "OUT/model_a/TIME OUT/model_b/TIME`."
        )
    return paths, index


def render(paths: list[str], baseline: int, args: argparse.Namespace) -> str:
    from audioeval.config.registry import TaskRegistry
    from audioeval.results.compare import paper, render
    from audioeval.results.compare.comparison import compare
    from audioeval.results.compare.pairing import plan, prompt_note
    from audioeval.results.compare.plot import shot_scaling
    from audioeval.results.compare.runs import load_runs

    runs = load_runs(paths)
    planned = plan(runs, baseline, args.unpaired)
    if planned.paired and (note := prompt_note(runs, baseline, planned.tasks)):
        planned.notes.append(note)
    needs_registry = args.table == "paper" or bool(planned.pooled)
    registry = TaskRegistry.discover(args.include_path) if needs_registry else None
    tables = paper.paper_tables(runs[baseline].record, registry) if registry and args.table == "paper" else []
    if args.table == "paper" and not tables:
        raise UsageError(
            "--table paper: none of the runs' benchmarks declares a paper table (the shipped benchmarks do); use "
            "--table compare."
        )
    specs = [c.spec for t in tables for c in t.columns] if tables else None
    comparison = compare(runs, baseline, planned, registry, args.bootstrap_iters, args.seed, specs)
    if args.plot:
        shot_scaling(comparison, Path(args.plot).expanduser())
    if tables:
        return _paper_text(comparison, tables, args.format)
    formats = {
        "terminal": render.terminal,
        "markdown": render.markdown,
        "latex": render.latex,
        "csv": render.csv_text,
        "json": render.json_text,
    }
    return formats[args.format](comparison)


def _paper_text(comparison: Comparison, tables: list[PaperTable], fmt: str) -> str:
    from audioeval.results.compare import paper

    empty = [t.title for t in tables if not paper.has_values(comparison, t)]
    tables = [t for t in tables if t.title not in empty]
    if empty:
        comparison.notes.append(
            f"left out, no run has a value in them (judged metrics need --judge): {', '.join(empty)}"
        )
    if not tables:
        raise UsageError("--table paper: " + comparison.notes[-1])
    if fmt == "latex":
        return "\n".join(paper.latex_table(comparison, t) for t in tables)
    if fmt == "csv":
        return paper.csv_table(comparison, tables)
    if fmt == "json":
        return paper.json_tables(comparison, tables)
    notes = list(comparison.notes)
    body = "\n\n".join(paper.markdown_table(comparison, t) for t in tables)
    return "\n".join([*notes, *([""] if notes else []), body])
