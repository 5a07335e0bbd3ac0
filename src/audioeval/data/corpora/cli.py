"""`audioeval corpora`: list the real corpora (per benchmark), download one, or check a local copy.

audioeval corpora [--benchmark NAME]
audioeval corpora download NAME --to DIR [--overwrite]
audioeval corpora check NAME DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

from audioeval.data.corpora.catalogue import find, listing
from audioeval.kvargs import FlagParser


def _parser() -> argparse.ArgumentParser:
    p = FlagParser(
        prog="audioeval corpora",
        description="The real corpora the benchmarks' builders can read: where each comes from, its licence and "
        "the layout expected. `download NAME --to DIR` fetches one and checks it; `check NAME DIR` checks a copy.",
    )
    p.add_argument("--benchmark", help="list only this benchmark's corpora")
    sub = p.add_subparsers(dest="command")
    download = sub.add_parser("download", help="fetch a corpus from its public home into DIR, checked")
    download.add_argument("name", help="corpus name, as `audioeval corpora` lists it")
    download.add_argument(
        "--to", required=True, type=Path, help="destination folder (must not exist or be empty)"
    )
    download.add_argument("--overwrite", action="store_true", help="replace a non-empty destination")
    check = sub.add_parser("check", help="check that a local folder has the layout the builder reads")
    check.add_argument("name")
    check.add_argument("folder", type=Path)
    return p


def cmd_corpora(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        print(listing(args.benchmark), end="")
        return 0
    entry = find(args.name)
    if args.command == "download":
        from audioeval.data.corpora.install import install

        where = install(entry.corpus, args.to, overwrite=args.overwrite)
        arg = entry.corpus.builder_args[0]
        print(
            f"{entry.corpus.title}: downloaded and checked into {where}; use it with --task_args {arg}={where}"
        )
        return 0
    entry.corpus.check(args.folder.expanduser())
    print(f"{args.folder}: a complete {entry.corpus.title} layout")
    return 0
