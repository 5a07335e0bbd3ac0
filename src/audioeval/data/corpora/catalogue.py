"""Every real corpus a shipped builder can read, as its benchmark declares it (`EpisodeBuilder.ABOUT`)."""

from __future__ import annotations

from dataclasses import dataclass

from audioeval.data.about import Corpus
from audioeval.data.builders import builder_names, load_builder_class
from audioeval.errors import UsageError, unknown_name_message


@dataclass(frozen=True)
class Entry:
    benchmark: str
    pretty_name: str
    corpus: Corpus


def catalogue() -> list[Entry]:
    entries = []
    for name in builder_names():
        about = getattr(load_builder_class(name), "ABOUT", None)
        if about is not None:
            entries += [Entry(name, about.pretty_name, corpus) for corpus in about.corpora]
    return entries


def find(name: str) -> Entry:
    entries = catalogue()
    for entry in entries:
        if entry.corpus.name == name:
            return entry
    raise UsageError(
        "audioeval corpora: "
        + unknown_name_message(
            "corpus", name, [e.corpus.name for e in entries], "`audioeval corpora` lists them."
        )
    )


def listing(benchmark: str | None = None) -> str:
    """What `audioeval corpora` prints: per benchmark, each corpus with its use, home, licence and layout."""
    entries = catalogue()
    if benchmark is not None:
        known = sorted({e.benchmark for e in entries})
        if benchmark not in known:
            raise UsageError("audioeval corpora: " + unknown_name_message("benchmark", benchmark, known))
        entries = [e for e in entries if e.benchmark == benchmark]
    lines: list[str] = []
    for bench in dict.fromkeys(e.benchmark for e in entries):
        lines += [f"{bench}:"]
        for e in (x for x in entries if x.benchmark == bench):
            c = e.corpus
            lines += [
                f"  {c.name}  {c.title}",
                f"    used for: {c.used_for}",
                f"    give it as: {', '.join(f'{a}=DIR' for a in c.builder_args[:1])} (--task_args or --builder_args)",
                f"    source:   {c.home}",
                f"    licence:  {c.license} ({c.license_note})",
                f"    layout:   {c.layout}",
                "    download: "
                + (
                    f"audioeval corpora download {c.name} --to DIR"
                    + (f" ({c.download_note})" if c.download_note else "")
                    if c.download is not None
                    else f"not automated: {c.download_note}"
                ),
            ]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
