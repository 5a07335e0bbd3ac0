"""A cheap identity for model files on disk, for cache keys: file names and sizes (and the full content of
small text files such as configs), so a changed checkpoint gets new cache entries without hashing weights."""

from __future__ import annotations

import hashlib
from pathlib import Path

TEXT_SUFFIXES = (".json", ".jinja", ".txt", ".model")


def fingerprint(path: Path, read_text_files: bool = True) -> str:
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.sha256()
    for file in files:
        h.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        if read_text_files and file.suffix in TEXT_SUFFIXES:
            h.update(file.read_bytes())
        else:
            h.update(str(file.stat().st_size).encode())
    return h.hexdigest()[:16]
