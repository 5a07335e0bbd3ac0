"""The network boundary of `audioeval corpora download`: everything that reaches a server is here (tests replace
these functions with local folders laid out like the remote)."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from audioeval.errors import DataError

TIMEOUT_S = 60


def http_get(url: str, dest: Path) -> None:
    """Stream `url` into `dest`."""
    request = urllib.request.Request(url, headers={"User-Agent": "audioeval-corpora"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response, dest.open("wb") as out:
            shutil.copyfileobj(response, out, length=1 << 20)
    except OSError as err:  # URLError, HTTPError, timeouts and disk errors are all OSErrors
        raise DataError(
            f"download of {url} failed: {err}. Check the network and run the command again."
        ) from err


def github_archive_url(repo: str, ref: str) -> str:
    return f"https://github.com/{repo}/archive/{ref}.zip"


def zenodo_files(record: str) -> list[dict[str, str]]:
    """The files of a Zenodo record: [{name, url, md5}], from the record's public JSON."""
    url = f"https://zenodo.org/api/records/{record}"
    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": "audioeval-corpora"}
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            data: Any = json.load(response)
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read Zenodo record {record} ({url}): {err}.") from err
    files = []
    for item in data.get("files") or []:
        links = item.get("links") or {}
        algorithm, _, digest = str(item.get("checksum", "")).partition(":")
        if algorithm != "md5" or not digest:
            raise DataError(
                f"Zenodo record {record}: file {item.get('key')!r} has no MD5 checksum to verify."
            )
        files.append({"name": item["key"], "url": links.get("content") or links["self"], "md5": digest})
    if not files:
        raise DataError(f"Zenodo record {record} lists no files.")
    return files


def hub_snapshot(repo: str, revision: str, dest: Path, allow_patterns: list[str] | None) -> None:
    """A Hugging Face dataset repository at `revision`, written into `dest`."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(
            repo, repo_type="dataset", revision=revision, local_dir=str(dest), allow_patterns=allow_patterns
        )
    except Exception as err:  # noqa: BLE001 - any Hub failure becomes one message
        raise DataError(f"download of Hugging Face dataset {repo}@{revision} failed: {err}.") from err


def hub_checksums(repo: str, revision: str) -> dict[str, tuple[str, str]]:
    """path -> ("sha256", hex) for LFS files, ("git-sha1", blob id) for the others, as the Hub lists them."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    try:
        tree = HfApi().list_repo_tree(repo, recursive=True, revision=revision, repo_type="dataset")
        files = [f for f in tree if isinstance(f, RepoFile)]
    except Exception as err:  # noqa: BLE001
        raise DataError(f"cannot list the files of Hugging Face dataset {repo}@{revision}: {err}.") from err
    return {f.path: ("sha256", f.lfs.sha256) if f.lfs is not None else ("git-sha1", f.blob_id) for f in files}
