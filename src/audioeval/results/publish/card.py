"""The dataset card (README.md) of a published run: YAML front matter with one `configs:` entry per task (its
per-sample details load by config name) and the run's settings under `audioeval:`; the body holds the main
results table, the command that reproduces the run, its settings and how to load the details."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audioeval.redact import redact_message
from audioeval.results.compact_table import compact_table
from audioeval.results.publish.details import Details
from audioeval.results.publish.reproduce import looks_local, selected_names
from audioeval.results.record import RunRecord

CARD_KEY = "audioeval"
SPLIT = "test"  # the details of one run; the benchmarks' episodes come from their test splits


@dataclass
class PublishedRun:
    """What the card says about one run."""

    record: RunRecord
    repo_id: str
    details: dict[str, tuple[str, Details]]  # task -> (path in the repository, what its file holds)
    files: list[str]  # every other file of the repository (results.json, summary.md, reports/...)
    command: str  # the command line that reproduces the run
    no_details: str | None  # why the repository holds no per-sample details, when it holds none


def model_label(record: RunRecord) -> str:
    """The model as the card names it: the backend and its checkpoint, a Hub id as given, a local checkpoint
    by its folder's name (never where it sits on the machine)."""
    model = record.model
    args = model.model_args
    named = next((str(args[k]) for k in ("pretrained", "model") if args.get(k)), None)
    if named and looks_local(named):
        named = Path(named).name
    return f"{model.name} ({named})" if named else model.name


def data_source(dataset: dict[str, Any]) -> str:
    """Where a task's episodes were read from (`--task_args dataset=`): a Hub dataset at its commit, or a
    local folder by the digest of its files (never its path)."""
    if dataset.get("kind") == "hub":
        return f"{dataset.get('repo_id')}@{dataset.get('revision')}"
    return f"a local folder (sha256 {dataset.get('sha256')})"


def settings(run: PublishedRun) -> dict[str, Any]:
    """The `audioeval:` block of the front matter: what ran, with what, and how to run it again."""
    r = run.record
    return {
        "model": {"name": r.model.name, "model_args": r.model.model_args},
        "tasks": {
            task: {"shots": c.shots, "n_episodes": c.n_episodes, "version": c.version}
            | ({"dataset": data_source(c.dataset)} if c.dataset is not None else {})
            for task, c in r.configs.items()
        },
        "groups": list(r.sections.groups),
        "num_fewshot": r.num_fewshot,
        "seed": r.seed,
        "limit": r.limit,
        "task_args": r.task_args,
        "bootstrap_resamples": r.bootstrap_resamples,
        "versions": r.versions,
        "git_commit": r.git_commit,
        "date": r.date,
        "command": run.command,
    }


def card_text(run: PublishedRun) -> str:
    from huggingface_hub import DatasetCardData

    extra: dict[str, Any] = {CARD_KEY: settings(run)}
    data = DatasetCardData(
        pretty_name=f"audioeval results: {model_label(run.record)}",
        tags=["audioeval", "evaluation", "audio"],
        configs=[
            {"config_name": task, "data_files": [{"split": SPLIT, "path": path}]}
            for task, (path, _details) in run.details.items()
        ]
        or None,  # a run without samples has no details to load
        **extra,
    )
    return redact_message(f"---\n{data.to_yaml()}\n---\n\n{_body(run)}")


def _body(run: PublishedRun) -> str:
    r = run.record
    version = r.versions.get("audioeval")
    lines = [
        f"# audioeval results: {model_label(r)}",
        "",
        f"Evaluation of `{r.model.name}` on {', '.join(f'`{n}`' for n in selected_names(r))} with "
        f"audioeval {version}, run on {r.date}"
        + (f" (git commit `{r.git_commit}`)." if r.git_commit else "."),
        "",
        "## Results",
        "",
        compact_table(r.sections.results, r.sections.groups),
        "",
        "Every metric with its standard error and failed requests: `summary.md`; the run's whole record: "
        "`results.json`"
        + (
            "; the benchmark reports: `reports/`."
            if any(f.startswith("reports/") for f in run.files)
            else "."
        ),
        "",
        "## Reproduce",
        "",
        "```bash",
        run.command,
        "```",
        "",
    ]
    return "\n".join(lines + _settings_section(r) + _details_section(run))


def _settings_section(r: RunRecord) -> list[str]:
    lines = ["## Settings", "", "| setting | value |", "|---|---|", f"| model | `{r.model.name}` |"]
    for key, value in r.model.model_args.items():
        lines.append(f"| model_args.{key} | `{value}` |")
    for task, c in r.configs.items():
        lines.append(f"| {task} | k = {', '.join(str(k) for k in c.shots)}; {c.n_episodes} episodes |")
    lines += [f"| seed | {r.seed} |", f"| limit | {r.limit if r.limit is not None else 'none'} |"]
    for key, value in r.task_args.items():
        lines.append(f"| task_args.{key} | `{value}` |")
    lines.append(f"| bootstrap resamples | {r.bootstrap_resamples} |")
    lines += [f"| {name} version | {v or 'not installed'} |" for name, v in r.versions.items()]
    lines.append("")
    if r.warnings:
        lines += ["The run warned:", "", *(f"- {w}" for w in r.warnings), ""]
    return lines


def _details_section(run: PublishedRun) -> list[str]:
    lines = ["## Per-sample details", ""]
    if not run.details:
        return lines + [run.no_details or "This repository holds no per-sample details.", ""]
    first = next(iter(run.details))
    lines += [
        f"One config per task (split `{SPLIT}`), one row per sample, in (episode, k) order:",
        "",
        "| config | rows | JSON columns |",
        "|---|---|---|",
    ]
    for task, (_path, d) in run.details.items():
        json_columns = ", ".join(f"`{c}`" for c, kind in d.columns.items() if kind == "json") or "—"
        lines.append(f"| {task} | {d.rows} | {json_columns} |")
    lines += [
        "",
        "Fields that hold objects or lists in the run's sample lines (metadata, messages, scores, generation "
        "settings) are JSON strings; `json.loads` gives them back as logged. Audio is referenced by its SHA-256, "
        "not stored.",
        "",
        "```python",
        "import json",
        "import datasets",
        "",
        f'ds = datasets.load_dataset("{run.repo_id}", "{first}", split="{SPLIT}")',
        'scores = [json.loads(row["scores"]) for row in ds]',
        "```",
        "",
    ]
    if run.no_details:
        lines += [run.no_details, ""]
    return lines
