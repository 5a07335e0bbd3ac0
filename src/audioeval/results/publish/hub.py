"""Uploading staged files to the Hub with huggingface_hub's documented API: everything is checked first (offline
mode, the token, the repositories), then the dataset repository gets one commit (`HfApi.create_commit` with
every file) and the model repository one pull request (`create_commit(..., create_pr=True)`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from audioeval.errors import UsageError
from audioeval.results.publish.tree import DATASET, MODEL, Staged

NOTHING = "nothing was uploaded"
# the folders push-results writes in a results repository: files there from an earlier push that this push
# does not write again are deleted in the same commit, so the card and the files agree
OWN_FOLDERS = ("details/", "reports/")


@dataclass
class Target:
    repo_id: str
    model_repo: str | None
    benchmark_repos: list[str]
    private: bool
    commit_message: str


@dataclass
class Uploaded:
    dataset_url: str
    commit: str | None
    pr_url: str | None


def _hub() -> Any:
    import huggingface_hub

    return huggingface_hub


@contextmanager
def hub_errors(doing: str, outcome: str = NOTHING) -> Iterator[None]:
    """A Hub failure as one line: what was being done, what went wrong, what to do and what was uploaded."""
    hub = _hub()
    try:
        yield
    except hub.errors.OfflineModeIsEnabled as err:
        raise UsageError(
            f"push-results: {doing}: HF_HUB_OFFLINE is set; unset it to upload ({outcome})."
        ) from err
    except hub.errors.RepositoryNotFoundError as err:
        raise UsageError(
            f"push-results: {doing}: no such repository, or your token cannot see it ({outcome})."
        ) from err
    except hub.errors.HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status == 401:
            raise UsageError(
                f"push-results: {doing}: the Hub refused the token (401); log in again with `hf auth login` "
                f"or set a valid HF_TOKEN ({outcome})."
            ) from err
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise UsageError(
            f"push-results: {doing}: the Hub answered {status or 'an error'}: {first} ({outcome})."
        ) from err
    except (
        OSError,
        TimeoutError,
    ) as err:  # connection refused, DNS, timeouts (httpx's errors are OSErrors too)
        raise UsageError(
            f"push-results: {doing}: cannot reach the Hugging Face Hub ({type(err).__name__}: {err}); check the "
            f"network, or write the files with --dry_run DIR ({outcome})."
        ) from err


def check_hub(target: Target) -> tuple[Any, bool, list[str]]:
    """Everything an upload needs, checked before anything is written: returns the API client, whether the
    results repository exists, and the files in it this push replaces."""
    hub = _hub()
    if hub.is_offline_mode():
        raise UsageError(
            f"push-results: HF_HUB_OFFLINE is set, so the Hub cannot be reached; unset it to upload, or write the "
            f"files with --dry_run DIR ({NOTHING})."
        )
    if not hub.get_token():
        raise UsageError(
            "push-results: no Hugging Face token. Run `hf auth login` (or set HF_TOKEN in the environment); the "
            f"token is never printed or written ({NOTHING})."
        )
    api = hub.HfApi()
    with hub_errors("checking the token"):
        api.whoami()
    if target.model_repo is not None:
        with hub_errors(f"--model_repo {target.model_repo}"):
            if not api.repo_exists(target.model_repo, repo_type="model"):
                raise UsageError(
                    f"--model_repo {target.model_repo}: no such model repository on the Hub, or your token cannot "
                    f"see it; check the name ({NOTHING})."
                )
    for repo in target.benchmark_repos:
        with hub_errors(f"benchmark dataset {repo}"):
            if not api.repo_exists(repo, repo_type="dataset"):
                raise UsageError(
                    f"--benchmark_repo {repo}: no such dataset repository on the Hub, or your token cannot see "
                    f"it; push the benchmark with `audioeval push` first ({NOTHING})."
                )
    with hub_errors(f"--repo_id {target.repo_id}"):
        exists = api.repo_exists(target.repo_id, repo_type="dataset")
        present = api.list_repo_files(target.repo_id, repo_type="dataset") if exists else []
    return api, exists, [f for f in present if f.startswith(OWN_FOLDERS)]


def upload(staged: Staged, target: Target, checked: tuple[Any, bool, list[str]] | None = None) -> Uploaded:
    """One commit on the dataset repository, then one pull request on the model repository. `checked`:
    what `check_hub` found, when it ran before the files were staged."""
    hub = _hub()
    api, exists, present = checked if checked is not None else check_hub(target)
    operations: list[Any] = [
        hub.CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(staged.root / DATASET / path))
        for path in staged.dataset_files
    ]
    operations += [
        hub.CommitOperationDelete(path_in_repo=p) for p in present if p not in staged.dataset_files
    ]
    with hub_errors(f"uploading to {target.repo_id}"):
        if not exists:
            api.create_repo(target.repo_id, repo_type="dataset", private=target.private, exist_ok=True)
        info = api.create_commit(
            target.repo_id, operations=operations, commit_message=target.commit_message, repo_type="dataset"
        )
    url = f"https://huggingface.co/datasets/{target.repo_id}"
    pr_url = None
    if target.model_repo is not None and staged.model_files:
        pr = [
            hub.CommitOperationAdd(path_in_repo=path, path_or_fileobj=str(staged.root / MODEL / path))
            for path in staged.model_files
        ]
        doing = f"opening the pull request on {target.model_repo}"
        outcome = f"the results are at {url}; run the same command again to open the pull request"
        with hub_errors(doing, outcome):
            opened = api.create_commit(
                target.model_repo,
                operations=pr,
                commit_message="Add evaluation results (audioeval)",
                commit_description=f"Evaluation results computed with audioeval; per-sample details: {url}",
                repo_type="model",
                create_pr=True,
            )
        pr_url = getattr(opened, "pr_url", None)
    return Uploaded(url, getattr(info, "oid", None), pr_url)
