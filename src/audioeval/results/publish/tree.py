"""The files `push-results` uploads, written into one folder first: `dataset/` is the tree of the results
dataset repository, `model/` the files of the pull request on the model repository. A dry run renames this
folder into place; an upload commits from it. Before anything leaves, every text that would be uploaded is
checked for the value of a secret in the environment (a Hub token, an API key)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from audioeval.errors import UsageError
from audioeval.redact import is_secret_name
from audioeval.results.outputs import safe_name
from audioeval.results.publish.card import PublishedRun, card_text
from audioeval.results.publish.details import Details, write_details
from audioeval.results.publish.eval_results import BenchmarkRepo, eval_results_files
from audioeval.results.publish.reproduce import reproduce_command
from audioeval.results.publish.run_folder import RunFolder

DATASET, MODEL = "dataset", "model"
NO_SAMPLES = (
    "This run logged no samples, so there are no per-sample details: run the evaluation with --log_samples "
    "to publish them."
)
NOT_SECRETS = ("PWD", "OLDPWD")  # secret-like names (`pwd`) of the shell's working directories


@dataclass
class Staged:
    root: Path
    dataset_files: list[str]  # paths in the dataset repository, under root/dataset
    model_files: list[str]  # paths in the model repository, under root/model
    details: dict[str, Details]
    no_details: str | None


def stage(
    run: RunFolder, root: Path, repo_id: str, model_repo: str | None, benchmarks: dict[str, BenchmarkRepo]
) -> Staged:
    """Write everything that would be uploaded under `root` (which must exist and be empty)."""
    dataset = root / DATASET
    files = _copy_run_files(run, dataset)
    details, paths, no_details = _write_details(run, dataset)
    published = PublishedRun(
        record=run.record,
        repo_id=repo_id,
        details={t: (paths[t], d) for t, d in details.items()},
        files=files,
        command=reproduce_command(run.record, logged_samples=bool(run.samples)),
        no_details=no_details,
    )
    (dataset / "README.md").write_text(card_text(published), encoding="utf-8")
    model_files = (
        _write_eval_results(run, root / MODEL, repo_id, model_repo, benchmarks) if model_repo else []
    )
    staged = Staged(root, ["README.md", *files, *paths.values()], model_files, details, no_details)
    check_no_secrets(staged, run)
    return staged


def _copy_run_files(run: RunFolder, dataset: Path) -> list[str]:
    """results.json, summary.md and the reports, as the run wrote them; their paths in the repository."""
    dataset.mkdir(parents=True)
    shutil.copyfile(run.path / "results.json", dataset / "results.json")
    files = ["results.json"]
    if run.summary is not None:
        shutil.copyfile(run.summary, dataset / "summary.md")
        files.append("summary.md")
    for report in run.reports:
        (dataset / "reports").mkdir(exist_ok=True)
        shutil.copyfile(report, dataset / "reports" / report.name)
        files.append(f"reports/{report.name}")
    return files


def _write_details(run: RunFolder, dataset: Path) -> tuple[dict[str, Details], dict[str, str], str | None]:
    """One parquet file per task with samples: what each holds, its path, and why some task has none."""
    details, paths, empty = {}, {}, []
    for task, samples in run.samples.items():
        path = f"details/{safe_name(task)}.parquet"
        (dataset / "details").mkdir(exist_ok=True)
        written = write_details(samples, dataset / path)
        if not written.rows:
            (dataset / path).unlink()
            empty.append(task)
            continue
        details[task], paths[task] = written, path
    if not run.samples:
        return details, paths, NO_SAMPLES
    if empty:
        return details, paths, f"No details for {', '.join(empty)}: their sample files hold no samples."
    return details, paths, None


def _write_eval_results(
    run: RunFolder, model: Path, repo_id: str, model_repo: str, benchmarks: dict[str, BenchmarkRepo]
) -> list[str]:
    """The `.eval_results/` files of the pull request on the model repository; their paths there."""
    source = f"https://huggingface.co/datasets/{repo_id}"
    files = eval_results_files(run.record, benchmarks, source, run.path.name)
    if not files:
        raise UsageError(
            f"--model_repo {model_repo}: the run has no headline number to publish (every group and task "
            "value is missing); nothing was written or uploaded."
        )
    for path, text in files.items():
        (model / path).parent.mkdir(parents=True, exist_ok=True)
        (model / path).write_text(text, encoding="utf-8")
    return list(files)


def _secrets() -> dict[str, str]:
    """Environment variables with secret names (HF_TOKEN, OPENAI_API_KEY, ...) and the Hub token, by name."""
    from huggingface_hub import get_token

    found = {
        f"${k}": v
        for k, v in os.environ.items()
        if is_secret_name(k) and k not in NOT_SECRETS and len(v.strip()) >= 8
    }
    token = get_token()
    if token:
        found.setdefault("the Hugging Face token", token)
    return found


def _text_files(staged: Staged, run: RunFolder) -> Iterator[Path]:
    for path in sorted(staged.root.rglob("*")):
        if path.is_file() and path.suffix in (".md", ".json", ".yaml", ".txt", ".csv", ".tex"):
            yield path
    yield from run.samples.values()  # the parquet details are made from these


def check_no_secrets(staged: Staged, run: RunFolder) -> None:
    """Refuse to publish a file that holds the value of a secret: the run masks secrets in what it writes, and
    this makes sure none slipped through before anything leaves the machine."""
    secrets = {name: value.strip().encode() for name, value in _secrets().items()}
    if not secrets:
        return
    longest = max(len(v) for v in secrets.values())
    for path in _text_files(staged, run):
        tail = b""
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                window = tail + chunk
                leaked = next((name for name, value in secrets.items() if value in window), None)
                if leaked is not None:
                    shown = path if not path.is_relative_to(staged.root) else path.relative_to(staged.root)
                    raise UsageError(
                        f"push-results: {shown} holds the value of {leaked}; nothing was written or uploaded. "
                        "Remove it from the run's files before publishing (the run should have masked it: "
                        "please report this)."
                    )
                tail = window[-longest:]
