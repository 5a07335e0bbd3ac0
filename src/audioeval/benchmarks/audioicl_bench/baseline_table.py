"""Reference baselines on AudioICL-Bench: `chance`, `shortcut`, `demo-majority`, `knn-icl` and `dsp-oracle` on every task
(the nine of `audioicl_bench` and the `audioicl_morse_letter` ablation) at k = 0, 1, 3, 5 with N = 300
episodes of the built-in synthetic data, evaluated through the harness (`audioeval.run.conductor.run_evaluation`), as a
markdown table of accuracy with 95% bootstrap CIs next to Qwen3-Omni's numbers in the AudioICL-Bench paper.

    python -m audioeval.benchmarks.audioicl_bench.baseline_table --update_readme README.md

writes `results/baselines/baseline_table.md` (and `baseline_results.json`, the numbers behind it), and with
`--update_readme` replaces the body of the README's `## Reference baselines (AudioICL-Bench)` section with the
table. Runs go to `results/baselines/runs/<model>/<timestamp>/` with their samples; responses are cached in
`results/baselines/cache`, so an interrupted run resumes. About 80 minutes on a shared 2-core machine (each
run's AudioICL report also scores the `shortcut` baseline on its episodes).
`--table_only` re-renders the table from `baseline_results.json` without evaluating.

With a local copy of the Free Spoken Digit Dataset (`--fsdd_dir`, default `../shared/corpora/fsdd` from the
repository root when it is there), AudioOperator and AudioOperatorHard are also run on real FSDD digits
(speaker jackson, as in the paper) for `chance`, `knn-icl` and `dsp-oracle`; those rows sit next to the
eSpeak-digit rows. `--only fsdd` runs just them (about 20 minutes on 2 cores at N = 300).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path.cwd()  # run from the repository root: results/ and ../shared/corpora are read from there

MODELS = ("chance", "shortcut", "demo-majority", "knn-icl", "dsp-oracle")
SHOTS = (0, 1, 3, 5)
TASK_SELECTION = "audioicl_bench,audioicl_ablation"
SECTION = "## Reference baselines (AudioICL-Bench)"
COMMAND = "python -m audioeval.benchmarks.audioicl_bench.baseline_table --update_readme README.md"


def task_facts(selection: str = TASK_SELECTION) -> dict[str, tuple[str, str, str]]:
    """task -> (short name, full name, chance as the paper states it, in %), in the order the groups list the
    tasks, read from each task's YAML `metadata.audioicl_bench` (where the report reads them too)."""
    from audioeval.config.registry import TaskRegistry

    registry = TaskRegistry.discover([])
    names, _groups = registry.select(selection)
    facts = {}
    for name in names:
        info = (registry.tasks[name].metadata or {})["audioicl_bench"]
        chance = "≈0" if info.get("chance_note") else f"{100 * float(info['chance']):.1f}"
        facts[name] = (str(info["short"]), str(info["name"]), chance)
    return facts


TASKS = task_facts()
GROUPS = {"audioicl_a2": "A2 average", "audioicl_a3": "A3 average"}

# the real-corpus rows: AudioOperator(Hard) with Free Spoken Digit Dataset recordings instead of eSpeak NG digits
FSDD_TASKS = ("audioicl_audio_operator", "audioicl_audio_operator_hard")
FSDD_MODELS = ("chance", "knn-icl", "dsp-oracle")
DEFAULT_FSDD = ROOT.parent / "shared" / "corpora" / "fsdd"

# Qwen3-Omni-30B-A3B-Instruct, Specific prompting, accuracy % and 95% CI half-width, from the AudioICL-Bench
# paper (Chen et al.): Table II for k = 0, 1, 3, 5 (its k=5 row is Table III's Qwen3 row), Table IV for the
# single-letter Morse ablation (no CI, no k stated; shown at k=0). A2/A3 at k=5 as printed in Table III; at the
# other k they are the unweighted means of the Table II entries (no CI).
PAPER_QWEN3: dict[str, dict[int, tuple[float, float | None]]] = {
    "audioicl_audio_count": {0: (0.3, 0.5), 1: (43.0, 5.7), 3: (59.7, 5.7), 5: (68.3, 5.3)},
    "audioicl_audio_count_hard": {0: (0.7, 0.8), 1: (16.3, 4.2), 3: (21.0, 4.7), 5: (29.7, 5.2)},
    "audioicl_audio_operator": {0: (34.0, 5.3), 1: (91.7, 3.2), 3: (99.7, 0.5), 5: (98.7, 1.2)},
    "audioicl_audio_operator_hard": {0: (1.3, 1.2), 1: (4.7, 2.3), 3: (5.3, 2.5), 5: (10.0, 3.5)},
    "audioicl_audio_remap": {0: (56.0, 5.7), 1: (66.0, 5.3), 3: (75.3, 4.8), 5: (89.0, 3.5)},
    "audioicl_anomaly_detect": {0: (49.7, 5.7), 1: (50.3, 5.7), 3: (52.7, 5.7), 5: (55.3, 5.7)},
    "audioicl_audio_length": {0: (0.0, 0.0), 1: (8.0, 3.2), 3: (7.7, 3.0), 5: (8.0, 3.0)},
    "audioicl_audio_length_hard": {0: (1.7, 1.5), 1: (11.0, 3.5), 3: (16.0, 4.0), 5: (13.3, 3.8)},
    "audioicl_morse_code": {0: (0.0, 0.0), 1: (0.0, 0.0), 3: (0.0, 0.0), 5: (0.0, 0.0)},
    "audioicl_morse_letter": {0: (11.5, None)},
}
PAPER_QWEN3_GROUPS = {"audioicl_a2": {5: 58.5}, "audioicl_a3": {5: 7.1}}
# Table III entries where another model beats Qwen3-Omni at k=5
PAPER_BETTER = "AudioOperatorHard: Gemini-3-flash 14.0 ± 3.8; AudioLengthHard: DeSTA2.5-Audio 14.0 ± 3.8"


# ---- evaluation ---------------------------------------------------------------------------------------------


def _fallback_shares(run_dir: Path) -> dict[str, dict[int, float]]:
    """dsp-oracle: per task and k, the share of answers drawn from the label space instead of read from audio."""
    shares: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("samples_*.jsonl")):
        drawn: Counter = Counter()
        total: Counter = Counter()
        task = path.stem[len("samples_") :]
        for line in path.read_text().splitlines():
            record = json.loads(line)
            k = int(record["shots"])
            total[k] += 1
            details = (record.get("response_info") or {}).get("dsp_oracle") or {}
            drawn[k] += bool(details.get("fallback"))
        shares[task] = {k: drawn[k] / total[k] for k in total}
    return shares


def evaluate(
    model: str, args: argparse.Namespace, tasks: str = TASK_SELECTION, task_args: dict[str, Any] | None = None
) -> dict[str, Any]:
    from audioeval.run.conductor import RunConfig, run_evaluation

    started = time.perf_counter()
    output = run_evaluation(
        RunConfig(
            tasks=tasks,
            model=model,
            num_fewshot=list(SHOTS),
            task_args={"n_episodes": args.n_episodes, **(task_args or {})},
            seed=args.seed,
            output_path=str(args.output_dir / "runs"),
            log_samples=model == "dsp-oracle",
            cache_dir=str(args.output_dir / "cache"),
            no_cache=args.no_cache,
            bootstrap_resamples=args.bootstrap_iters,
            show_progress=False,
        )
    )
    assert output is not None
    run_dir = Path(output["run_dir"])

    def block(entry: dict[str, Any]) -> dict[str, Any]:
        return {"accuracy": entry["accuracy"], "ci95": entry["accuracy_ci95"], "n": entry["n"]}

    return {
        "run_dir": str(run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "tasks": {
            task: {int(key.split("-")[0]): block(v) for key, v in per_k.items()}
            for task, per_k in output["results"].items()
        },
        "groups": {
            group: {int(key.split("-")[0]): block(v) for key, v in per_k.items() if key.endswith("-shot")}
            for group, per_k in output["groups"].items()
            if group in GROUPS
        },
        "fallback": _fallback_shares(run_dir) if model == "dsp-oracle" else {},
    }


# ---- the table ----------------------------------------------------------------------------------------------


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("accuracy") is None:
        return "—"
    if not entry.get("ci95"):  # one episode or no bootstrap: no interval was measured
        return f"{100 * entry['accuracy']:.1f}"
    lo, hi = entry["ci95"]
    return f"{100 * entry['accuracy']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _paper(task: str, k: int) -> str:
    value = PAPER_QWEN3.get(task, {}).get(k)
    if value is None:
        return ""
    mean, half = value
    return f"{mean:.1f}" + (f" ± {half:.1f}" if half is not None else "")


@cache
def _group_members(group: str) -> tuple[str, ...]:
    """The group's tasks as the shipped task configs define them."""
    from audioeval.config.registry import TaskRegistry

    return tuple(TaskRegistry.discover().leaf_tasks(group))


def _paper_group(group: str, k: int) -> str:
    if k in PAPER_QWEN3_GROUPS[group]:
        return f"{PAPER_QWEN3_GROUPS[group][k]:.1f}"
    values = [PAPER_QWEN3[t][k][0] for t in _group_members(group) if k in PAPER_QWEN3[t]]
    return f"{sum(values) / len(values):.1f}*"


def _oracle_cell(entry: dict[str, Any] | None, share: float | None) -> str:
    text = _cell(entry)
    if share is None or share == 0 or text == "—":
        return text
    if share >= 0.9995:
        return text + " †"
    return text + f" ({100 * share:.0f}% drawn)"


FSDD_MARK = "FSDD digits ‡"


def _fsdd_note(summary: dict[str, Any]) -> str:
    settings = summary["fsdd"]["settings"]
    return (
        f" ‡ the same task with the paper's digits: real Free Spoken Digit Dataset recordings of speaker "
        f"jackson (`--task_args fsdd_dir=...`; N = {settings['n_episodes']}, seed {settings['seed']}) instead of "
        "eSpeak NG digits; the operator sounds stay procedural (only these rows: `python -m audioeval.benchmarks.audioicl_bench.baseline_table "
        "--only fsdd --update_readme README.md`)."
    )


def _fsdd_rows(summary: dict[str, Any], task: str, models: list[str]) -> list[str]:
    """The task's rows on real FSDD digits (only the models run there; the others show —)."""
    fsdd = summary.get("fsdd") or {}
    if task not in FSDD_TASKS or not fsdd.get("models"):
        return []
    short, full, chance = TASKS[task]
    rows = []
    for k in fsdd["settings"]["shots"]:
        cells = []
        for model in models:
            result = fsdd["models"].get(model)
            entry = result["tasks"].get(task, {}).get(str(k)) if result else None
            share = result["fallback"].get(task, {}).get(str(k)) if result else None
            cells.append(_oracle_cell(entry, share) if model == "dsp-oracle" else _cell(entry))
        rows.append(f"| {full} ({short}), {FSDD_MARK} | {k} | {chance} | " + " | ".join(cells) + " | |")
    return rows


def render(summary: dict[str, Any]) -> str:
    settings = summary["settings"]
    models = [m for m in MODELS if m in summary["models"]]
    lines = [
        f"Accuracy in % with the 95% bootstrap CI over episodes (N = {settings['n_episodes']} per task and k, "
        f"seed {settings['seed']}, built-in procedural sources, {settings['bootstrap_iters']} resamples). "
        "`chance` draws from the task's label space; `shortcut` never analyses the signal (clip identity, "
        "elimination, label statistics); `demo-majority` answers the demos' most frequent label; "
        "`knn-icl` is nearest neighbour / ridge regression on MFCC statistics of the demo clips; `dsp-oracle` "
        "reads the answer from the signal with constants calibrated on the episode (see "
        "[docs/baselines.md](docs/baselines.md)). Qwen3-Omni: the paper's numbers (Specific prompting; Table II, "
        "whose k=5 row is Table III; MorseLetter from Table IV) on the original corpora, so not comparable "
        "number for number with episodes of the procedural sources.",
        "",
        "| task | k | chance (paper) | " + " | ".join(f"`{m}`" for m in models) + " | Qwen3-Omni (paper) |",
        "|---|---|---|" + "---|" * len(models) + "---|",
    ]
    for task, (short, full, chance) in TASKS.items():
        for k in settings["shots"]:
            cells = []
            for model in models:
                entry = summary["models"][model]["tasks"].get(task, {}).get(str(k))
                if model == "dsp-oracle":
                    share = summary["models"][model]["fallback"].get(task, {}).get(str(k))
                    cells.append(_oracle_cell(entry, share))
                else:
                    cells.append(_cell(entry))
            lines.append(
                f"| {full} ({short}) | {k} | {chance} | " + " | ".join(cells) + f" | {_paper(task, k)} |"
            )
        lines += _fsdd_rows(summary, task, models)
    for group, title in GROUPS.items():
        for k in settings["shots"]:
            cells = [_cell(summary["models"][m]["groups"].get(group, {}).get(str(k))) for m in models]
            lines.append(f"| **{title}** | {k} | | " + " | ".join(cells) + f" | {_paper_group(group, k)} |")
    lines += [
        "",
        "† every answer is a uniform draw from the label space: with k=0 these `dsp-oracle` methods have no demos to "
        "calibrate on (MorseCode, MorseLetter and AudioRemap need none: the bank or the query's labelled anchors "
        "suffice). A share in parentheses is the fraction of episodes where the analysis reached no answer and "
        "the oracle drew instead. * mean of the paper's Table II entries (no CI). The paper's chance for MorseCode "
        "is (1/26)^5; the `chance` model draws among 32 candidate words. For AudioOperator(Hard) `chance` and "
        "`shortcut` choose among the results the query's own operands give, which the other baselines do not "
        "see. `shortcut` on the episodes without its shortcuts (`shortcut_free=true`): "
        "[docs/audioicl_bench.md](docs/audioicl_bench.md#shortcuts). Where another "
        f"model beats Qwen3-Omni in Table III (k=5): {PAPER_BETTER}.",
    ]
    if (summary.get("fsdd") or {}).get("models"):
        lines[-1] += _fsdd_note(summary)
    return "\n".join(lines)


def splice_fsdd_rows(readme: Path, summary: dict[str, Any]) -> None:
    """Put the FSDD rows (and their footnote) into the README's existing table, after each task's own rows:
    for a run of the FSDD rows alone, without the eSpeak results this script would need to redraw the table."""
    text = readme.read_text(encoding="utf-8")
    lines = [line for line in text.split("\n") if FSDD_MARK not in line]
    header = next(i for i, line in enumerate(lines) if line.startswith("| task | k | chance (paper) |"))
    models = [c.strip(" `") for c in lines[header].split("|")[4:-2]]
    for task, (short, full, _chance) in TASKS.items():
        rows = _fsdd_rows(summary, task, models)
        if rows:
            last = max(i for i, line in enumerate(lines) if line.startswith(f"| {full} ({short}) | "))
            lines[last + 1 : last + 1] = rows
    note = next(i for i, line in enumerate(lines) if line.startswith("† every answer"))
    lines[note] = lines[note].split(" ‡ ")[0] + _fsdd_note(summary)
    readme.write_text("\n".join(lines), encoding="utf-8")


def update_readme(readme: Path, table: str) -> None:
    text = readme.read_text(encoding="utf-8")
    body = (
        f"{SECTION}\n\nNon-LLM reference points for every AudioICL-Bench task: what a model that never analyses "
        "the signal, a prior-only learner, a nearest-neighbour learner without language and task-aware signal "
        "processing reach from the same episodes (method details and what the table says in [docs/baselines.md](docs/baselines.md)). "
        "Regenerate with (about 80 minutes on a shared 2-core machine; results in `results/baselines/`):\n\n"
        f"```bash\n{COMMAND}\n```\n\n{table}\n"
    )
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        new = pattern.sub(lambda _: body + "\n", text, count=1)
    else:
        new = text.rstrip("\n") + "\n\n" + body
    readme.write_text(new.rstrip("\n") + "\n", encoding="utf-8")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--output_dir", type=Path, default=ROOT / "results" / "baselines")
    parser.add_argument("--n_episodes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bootstrap_iters", type=int, default=10_000)
    parser.add_argument("--models", default=",".join(MODELS), help="comma list out of " + ", ".join(MODELS))
    parser.add_argument("--no_cache", action="store_true", help="do not read or write the response cache")
    parser.add_argument("--update_readme", type=Path, help="README whose baselines section gets the table")
    parser.add_argument("--table_only", action="store_true", help="re-render from baseline_results.json")
    parser.add_argument(
        "--fsdd_dir",
        type=Path,
        default=DEFAULT_FSDD,
        help="local Free Spoken Digit Dataset for the FSDD rows (default: ../shared/corpora/fsdd from the "
        "repository root; the rows are skipped when it is missing)",
    )
    parser.add_argument(
        "--only", choices=["espeak", "fsdd"], help="run only the eSpeak-digit table or only the FSDD rows"
    )
    return parser


def _measure(args: argparse.Namespace, models: list[str], summary_path: Path) -> None:
    """Evaluate each model (and the FSDD rows), keeping the results of the other models of a run with the
    same settings; baseline_results.json is rewritten after each model."""
    settings = {
        "n_episodes": args.n_episodes,
        "seed": args.seed,
        "shots": list(SHOTS),
        "bootstrap_iters": args.bootstrap_iters,
        "tasks": TASK_SELECTION,
    }
    summary = {"settings": settings, "models": {}}
    previous = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    if previous.get("settings") == settings:  # keep the other models' results of a run with the same settings
        summary["models"] = previous.get("models", {})
    fsdd_settings = {k: v for k, v in settings.items() if k != "tasks"} | {"tasks": ",".join(FSDD_TASKS)}
    summary["fsdd"] = {"settings": fsdd_settings, "models": {}}
    if (previous.get("fsdd") or {}).get("settings") == fsdd_settings:
        summary["fsdd"]["models"] = previous["fsdd"].get("models", {})
    for model in models if args.only != "fsdd" else []:
        print(
            f"[baseline_table] {model}: {TASK_SELECTION} at k={list(SHOTS)}, N={args.n_episodes}",
            flush=True,
        )
        summary["models"][model] = evaluate(model, args)
        print(f"[baseline_table] {model}: {summary['models'][model]['wall_seconds']} s", flush=True)
        # JSON keys are strings: store them as such so --table_only reads the same structure
        summary_path.write_text(json.dumps(json.loads(json.dumps(summary)), indent=1) + "\n")
    fsdd_models = [m for m in models if m in FSDD_MODELS] if args.only != "espeak" else []
    if fsdd_models and not args.fsdd_dir.is_dir():
        print(f"[baseline_table] no FSDD copy at {args.fsdd_dir}: the FSDD rows are skipped", flush=True)
        fsdd_models = []
    for model in fsdd_models:
        print(f"[baseline_table] {model}: {','.join(FSDD_TASKS)} on FSDD digits", flush=True)
        result = evaluate(model, args, ",".join(FSDD_TASKS), {"fsdd_dir": str(args.fsdd_dir.resolve())})
        summary["fsdd"]["models"][model] = result
        print(f"[baseline_table] {model} (FSDD): {result['wall_seconds']} s", flush=True)
        summary_path.write_text(json.dumps(json.loads(json.dumps(summary)), indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    args.output_dir.mkdir(parents=True, exist_ok=True)
    summary_path = args.output_dir / "baseline_results.json"
    if args.table_only and not summary_path.exists():
        parser.error(f"--table_only: {summary_path} does not exist; run without --table_only first")
    if not args.table_only:
        _measure(args, models, summary_path)
    summary = json.loads(summary_path.read_text())
    if not summary["models"]:  # only the FSDD rows were run: put them into the README's table
        if args.update_readme and (summary.get("fsdd") or {}).get("models"):
            splice_fsdd_rows(args.update_readme, summary)
            print(f"updated: {args.update_readme} (the FSDD rows of {SECTION})")
        return 0
    table = render(summary)
    (args.output_dir / "baseline_table.md").write_text(table + "\n")
    print(table)
    print(f"\ntable: {args.output_dir / 'baseline_table.md'}")
    if args.update_readme:
        update_readme(args.update_readme, table)
        print(f"updated: {args.update_readme} ({SECTION})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
