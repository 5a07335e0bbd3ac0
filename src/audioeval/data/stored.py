"""Where `--task_args dataset=...` points: a local folder written by `audioeval build`, or a Hugging Face dataset
repository (`org/name`, optionally `org/name@revision`), and which revision of it was read.

A Hub dataset is fetched with `huggingface_hub.snapshot_download` into the usual Hugging Face cache: the card
first, then only the parquet files of the configs a run needs; with HF_HUB_OFFLINE=1 the cached snapshot is used.
The revision a run records is the repository's commit sha (Hub) or a SHA-256 over the card and every data file
it read (local folder), so a result can always be traced to the exact rows behind it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audioeval.errors import DataError, close_matches, unknown_name_message

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[A-Za-z0-9][\w.\-]*(@[\w.\-/]+)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class DatasetLocation:
    spec: str  # what the user wrote
    folder: Path
    repo_id: str | None = None  # set for a Hub dataset
    commit: str | None = None
    _fetched: set[str] = field(default_factory=set)

    @property
    def is_hub(self) -> bool:
        return self.repo_id is not None

    def describe(self) -> str:
        return f"Hub dataset {self.repo_id}@{self.commit}" if self.is_hub else f"folder {self.folder}"

    def fetch(self, patterns: Iterable[str]) -> None:
        """Make the files matching `patterns` present (a no-op for a local folder)."""
        wanted = sorted(set(patterns) - self._fetched)
        if not self.is_hub or not wanted:
            return
        _snapshot(self.repo_id or "", self.commit, ["README.md", *wanted])
        self._fetched.update(wanted)

    def revision(self, files: list[Path]) -> dict[str, Any]:
        if self.is_hub:
            return {"kind": "hub", "repo_id": self.repo_id, "revision": self.commit}
        return {
            "kind": "local",
            "sha256": content_digest(self.folder, files),
            "files": [p.relative_to(self.folder).as_posix() for p in sorted(files)],
        }


_HINT = (
    "Give a folder written by `audioeval build`, a Hugging Face dataset id such as org/name "
    "(org/name@revision for a fixed revision), or a benchmark name to generate the episodes."
)


def locate(spec: str, known_names: Iterable[str]) -> DatasetLocation:
    """A local folder if `spec` is one, else a Hub repository id; anything else is an error saying which
    (empty, no such folder, a file, neither) and naming the close matches among the benchmark names."""
    text = str(spec).strip()
    if not text:
        raise DataError(f"--task_args dataset= is empty. {_HINT}")
    path = Path(text).expanduser()
    if path.is_dir():
        return DatasetLocation(spec=text, folder=path.resolve())
    if _REPO_ID.match(text) and not path.exists() and not _looks_like_a_path(text):
        repo_id, _, revision = text.partition("@")
        folder = Path(_snapshot(repo_id, revision or None, ["README.md"]))
        commit = folder.name if _COMMIT.match(folder.name) else _commit_of(repo_id, revision or None)
        return DatasetLocation(spec=text, folder=folder, repo_id=repo_id, commit=commit)
    if path.exists():
        raise DataError(f"--task_args dataset={text}: this is a file, not a folder. {_HINT}")
    if _looks_like_a_path(text):
        raise DataError(f"--task_args dataset={text}: no such folder{_nearby(path)}. {_HINT}")
    raise DataError(
        "--task_args dataset: " + unknown_name_message("dataset", text, sorted(set(known_names)), _HINT)
    )


def _looks_like_a_path(text: str) -> bool:
    return text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1


def _nearby(path: Path) -> str:
    """Close matches among the folders beside where `path` points, when there are any."""
    parent = path.parent
    if not parent.is_dir():
        return f" (nor is there a folder {parent})"
    try:
        names = [p.name for p in parent.iterdir() if p.is_dir()]
    except OSError:
        return ""
    matches = close_matches(path.name, names)
    return f" (did you mean {', '.join(str(parent / m) for m in matches)}?)" if matches else ""


def _snapshot(repo_id: str, revision: str | None, patterns: list[str]) -> str:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    try:
        return snapshot_download(repo_id, repo_type="dataset", revision=revision, allow_patterns=patterns)
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as err:
        raise DataError(
            f"--task_args dataset={repo_id}: not in the local Hugging Face cache and the Hub cannot be reached "
            f"({type(err).__name__}). Download it once where the Hub is reachable "
            f"(`hf download {repo_id} --repo-type dataset`, then run with HF_HUB_OFFLINE=1), give the folder "
            "it is in, or build it locally with `audioeval build`."
        ) from err
    except (HfHubHTTPError, OSError, ValueError) as err:
        raise DataError(f"--task_args dataset={repo_id}: cannot fetch it from the Hub ({err}).") from err


def _commit_of(repo_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi

    try:
        sha = HfApi().dataset_info(repo_id, revision=revision).sha
    except Exception as err:  # noqa: BLE001 - any Hub failure becomes one message
        raise DataError(f"--task_args dataset={repo_id}: cannot read its commit sha ({err}).") from err
    if not sha:
        raise DataError(f"--task_args dataset={repo_id}: the Hub reports no commit sha for it.")
    return sha


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def content_digest(root: Path, files: Iterable[Path]) -> str:
    """SHA-256 over "<relative path>\\t<sha256>\\n" lines, sorted by path: one digest for a set of files."""
    lines = sorted(f"{p.relative_to(root).as_posix()}\t{file_sha256(p)}\n" for p in files)
    return hashlib.sha256("".join(lines).encode()).hexdigest()
