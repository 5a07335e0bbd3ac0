"""Fetching a corpus into a folder: everything happens in a temporary folder next to the destination, which is
renamed into place only after the checksums (the publisher's, or the digest pinned in the corpus entry) and the
builder's own layout check passed. A failure at any point removes the temporary folder: nothing half-written is
left at the destination."""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import shutil
import tarfile
import zipfile
from pathlib import Path

from audioeval.data.about import Corpus, Download
from audioeval.data.corpora import remote
from audioeval.data.destination import fresh_destination, interrupt_on_terminate, make_staging
from audioeval.data.stored import content_digest, file_sha256
from audioeval.errors import DataError, UsageError

log = logging.getLogger("audioeval")


def install(corpus: Corpus, destination: Path, overwrite: bool = False) -> Path:
    if corpus.download is None:
        raise UsageError(
            f"audioeval corpora download {corpus.name}: no automatic download for {corpus.title}: "
            f"{corpus.download_note}. Then check the folder with `audioeval corpora check {corpus.name} DIR`."
        )
    destination = fresh_destination("--to", destination, overwrite)
    with interrupt_on_terminate():  # SIGTERM, like Ctrl-C, removes the staging folder
        staging = make_staging("--to", destination, "downloading")
        try:
            root = staging / "corpus"
            fetch(corpus.download, root, staging / "work")
            log.info("checking the layout of %s", corpus.title)
            corpus.check(root)
            if destination.exists():
                shutil.rmtree(destination)
            root.rename(destination)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return destination


def fetch(spec: Download, root: Path, work: Path) -> None:
    """Download `spec` into `root` (created) and verify it; `work` holds the raw downloads."""
    work.mkdir(parents=True, exist_ok=True)
    if spec.kind == "github":
        _github(spec, root, work)
    elif spec.kind == "zenodo":
        _zenodo(spec, root, work)
    elif spec.kind == "hub":
        _hub(spec, root)
    else:
        raise DataError(f"unknown download kind {spec.kind!r}")
    if spec.content_sha256 is not None:
        files = [p for p in root.rglob("*") if p.is_file()]
        found = content_digest(root, files)
        if found != spec.content_sha256:
            raise DataError(
                f"{spec.repo}@{spec.ref}: the downloaded files ({len(files)}) do not match the pinned content "
                f"digest (expected {spec.content_sha256}, got {found}); the source has changed or the download "
                "is incomplete. Nothing was installed."
            )
    for target, part in spec.parts:
        fetch(part, root / target, work / f"part-{target.replace('/', '_')}")


def _github(spec: Download, root: Path, work: Path) -> None:
    url = remote.github_archive_url(spec.repo, spec.ref)
    log.info("downloading %s", url)
    archive = work / "archive.zip"
    remote.http_get(url, archive)
    unpacked = work / "unpacked"
    _unzip(archive, unpacked, url)
    tops = [p for p in unpacked.iterdir()]
    top = tops[0] if len(tops) == 1 and tops[0].is_dir() else unpacked  # GitHub archives have one top folder
    source = top / spec.subdir if spec.subdir else top
    if not source.is_dir():
        raise DataError(
            f"{url}: the archive has no folder {spec.subdir!r}; the repository layout has changed."
        )
    source.rename(root)


def _zenodo(spec: Download, root: Path, work: Path) -> None:
    root.mkdir(parents=True)
    for item in remote.zenodo_files(spec.ref):
        name = Path(item["name"]).name
        target = work / name
        log.info("downloading %s", item["url"])
        remote.http_get(item["url"], target)
        digest = _md5(target)
        if digest != item["md5"]:
            raise DataError(
                f"Zenodo record {spec.ref}: {name} has MD5 {digest}, the record says {item['md5']}; the download "
                "is corrupt. Nothing was installed; run the command again."
            )
        if name.endswith(".zip"):
            _unzip(target, root, item["url"])
        elif name.endswith((".tar", ".tar.gz", ".tgz")):
            _untar(target, root, item["url"])
        else:
            shutil.move(str(target), root / name)
    _descend_single_folder(root)


def _hub(spec: Download, root: Path) -> None:
    patterns = list(spec.allow_patterns) or None
    root.mkdir(parents=True, exist_ok=True)
    log.info("downloading Hugging Face dataset %s@%s", spec.repo, spec.ref)
    remote.hub_snapshot(spec.repo, spec.ref, root, patterns)
    shutil.rmtree(root / ".cache", ignore_errors=True)  # huggingface_hub's bookkeeping for local_dir
    expected = remote.hub_checksums(spec.repo, spec.ref)
    if patterns:
        expected = {p: v for p, v in expected.items() if any(fnmatch.fnmatch(p, pat) for pat in patterns)}
    for path, (algorithm, digest) in sorted(expected.items()):
        local = root / path
        if not local.is_file():
            raise DataError(f"{spec.repo}@{spec.ref}: {path} is missing from the download.")
        found = file_sha256(local) if algorithm == "sha256" else _git_blob_sha1(local)
        if found != digest:
            raise DataError(
                f"{spec.repo}@{spec.ref}: {path} has {algorithm} {found}, the Hub says {digest}; the download is "
                "corrupt. Nothing was installed; run the command again."
            )
    for name in spec.extract:
        archive = root / name
        _untar(archive, root, f"{spec.repo}/{name}")
        archive.unlink()


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _git_blob_sha1(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _unzip(archive: Path, dest: Path, where: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                _inside(dest, member, where)
            zf.extractall(dest)
    except zipfile.BadZipFile as err:
        raise DataError(f"{where}: not a valid zip archive ({err}); the download is incomplete.") from err


def _untar(archive: Path, dest: Path, where: str) -> None:
    try:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                _inside(dest, member.name, where)
            tf.extractall(dest, filter="data")
    except tarfile.TarError as err:
        raise DataError(f"{where}: not a valid tar archive ({err}); the download is incomplete.") from err


def _inside(dest: Path, member: str, where: str) -> None:
    target = (dest / member).resolve()
    if not target.is_relative_to(dest.resolve()):
        raise DataError(f"{where}: archive member {member!r} would be written outside the corpus folder.")


def _descend_single_folder(root: Path) -> None:
    """An archive that holds one folder: its content becomes the corpus root."""
    entries = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        inner = entries[0].rename(root / ".single-folder")  # free its name: it may hold a child of that name
        for child in list(inner.iterdir()):
            child.rename(root / child.name)
        inner.rmdir()
