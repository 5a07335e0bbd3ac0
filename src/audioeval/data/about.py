"""What a benchmark declares about itself for people outside the harness: the paper to cite, the licences, the
real corpora its builder can read and what each column of its Hub rows means.

Each benchmark states these facts once, next to its builder (`EpisodeBuilder.ABOUT`); the dataset card
(`audioeval.data.card`) and `audioeval corpora` read them from there, so the core never names a benchmark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Download:
    """Where a corpus is fetched from and how the result is checked.

    kind: "github" (a repository archive at `ref`), "zenodo" (every file of record `ref`, checked against the
    record's MD5 sums), "hub" (a Hugging Face dataset repository at revision `ref`, checked against the
    repository's SHA-256 / git object ids).
    `subdir`: the folder of the download that becomes the corpus root ("" = the whole download).
    `content_sha256`: for sources that publish no checksum, the digest of the corpus files that were checked
    when this entry was written (see `audioeval.data.corpora.verify.content_digest`); None when not pinned.
    `parts`: further downloads placed under the root (target subfolder -> Download), e.g. an audio archive that
    completes a code repository's layout.
    """

    kind: str
    repo: str
    ref: str
    subdir: str = ""
    content_sha256: str | None = None
    extract: tuple[str, ...] = ()  # archives inside the download to unpack in place (e.g. audios.tar)
    parts: tuple[tuple[str, Download], ...] = ()
    allow_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Corpus:
    """A real corpus a builder can read instead of (or as) its built-in data."""

    name: str  # what `audioeval corpora download NAME` takes
    title: str
    builder_args: tuple[str, ...]  # the builder / task parameters that point at a local copy
    used_for: str
    home: str  # where it is published
    license: str  # Hugging Face licence id ("cc-by-sa-4.0", "unknown", ...)
    license_note: str
    layout: str  # the expected folder layout, in words
    check: Callable[[Path], Any]  # raises DataError naming the missing file or field
    download: Download | None = None
    download_note: str = ""  # why there is no automatic download, or what to mind


@dataclass(frozen=True)
class BenchmarkAbout:
    """The dataset-card facts of one benchmark."""

    pretty_name: str
    summary: str
    paper: str  # "Authors, Title, Venue Year"
    citation: str  # BibTeX
    homepage: str
    upstream_license: str  # what the upstream project says about licensing, in words
    generated_license: str  # licence id of what audioeval itself generates (procedural audio, own texts)
    generated_note: str
    task_categories: tuple[str, ...]
    languages: tuple[str, ...]
    tags: tuple[str, ...]
    features: dict[str, str]  # column path ("query.clips[].audio") -> description
    corpora: tuple[Corpus, ...] = ()
    path_args: tuple[str, ...] = field(default=())  # builder arguments that name local files besides corpora

    def corpus(self, name: str) -> Corpus | None:
        return next((c for c in self.corpora if c.name == name), None)

    def corpus_for_arg(self, arg: str) -> Corpus | None:
        return next((c for c in self.corpora if arg in c.builder_args), None)
