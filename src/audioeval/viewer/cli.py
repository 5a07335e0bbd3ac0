"""`audioeval view RUN_DIR [RUN_DIR ...] [--port P] [--host H]` serves the viewer on this machine;
`audioeval view RUN_DIR ... --export DIR [--tasks ...] [--limit N]` writes it as a static site."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from audioeval.errors import UsageError
from audioeval.kvargs import FlagParser

log = logging.getLogger("audioeval")
DEFAULT_PORT = 8765


def view_parser() -> argparse.ArgumentParser:
    p = FlagParser(
        prog="audioeval view",
        description="Look at and listen to runs: an overview of the results, every logged sample with the audio "
        "the model heard (rebuilt from the run's recorded task configs and checked against the logged sha256), and "
        "runs side by side. Serves a local web app, or writes a static site with --export.",
    )
    p.add_argument(
        "runs", nargs="+", metavar="RUN_DIR", help="run folder(s): OUTPUT_PATH/<model>/<timestamp>"
    )
    p.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to serve on (default {DEFAULT_PORT}; 0: any free port)",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--export", metavar="DIR", help="write a static site to DIR instead of serving")
    p.add_argument("--tasks", help="with --export: only these tasks (comma list)")
    p.add_argument("--limit", type=int, help="with --export: only the first N episodes of each task")
    p.add_argument(
        "--trust_builder_files",
        action="store_true",
        help="rebuild the audio of tasks whose builder is a .py file the run names (code outside audioeval: "
        "pass this only for runs you or someone you trust made)",
    )
    p.add_argument("--verbosity", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return p


def cmd_view(argv: list[str]) -> int:
    args = view_parser().parse_args(argv)
    if args.export is None and (args.tasks or args.limit is not None):
        raise UsageError("--tasks and --limit choose what an --export writes; the server shows everything.")
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}.")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}.")

    from audioeval.viewer.run_folder import RunFolder

    runs = [RunFolder.open(path) for path in args.runs]
    if not args.trust_builder_files:
        _say_untrusted_builders(runs)
    if args.export is not None:
        from audioeval.viewer.export import export_site

        tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
        summary = export_site(
            runs,
            Path(args.export).expanduser(),
            tasks=tasks,
            limit=args.limit,
            trust_builder_files=args.trust_builder_files,
        )
        print(
            f"audioeval view: wrote {summary.folder}/index.html ({summary.samples} samples, {summary.clips} clips, "
            f"{summary.bytes / 1e6:.1f} MB); open it in a browser, no server needed."
        )
        if summary.clips_not_regenerated:
            print(
                f"audioeval view: {summary.clips_not_regenerated} clip(s) could not be regenerated; the samples "
                "say why.",
                file=sys.stderr,
            )
        return 0

    from audioeval.viewer.server import ViewerServer
    from audioeval.viewer.site import ServerLinks, Site

    server = ViewerServer(Site(runs, ServerLinks(), args.trust_builder_files), args.host, args.port)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serving on %s: anyone who can reach this address can read these runs.", args.host)
    runs_served = f"{len(runs)} run" if len(runs) == 1 else f"{len(runs)} runs"
    print(f"audioeval view: {runs_served} at {server.url}  (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\naudioeval view: stopped.", file=sys.stderr)
    finally:
        server.close()
    return 0


def _say_untrusted_builders(runs: list[Any]) -> None:
    from audioeval.viewer.regenerate import builder_files

    for run in runs:
        for task, path in builder_files(run.configs).items():
            print(
                f"audioeval view: {run.path}: task {task}'s builder is the file {path} (code outside audioeval): "
                "its audio is not rebuilt; pass --trust_builder_files to run it.",
                file=sys.stderr,
            )
