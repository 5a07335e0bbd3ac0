"""The `--augment` flags, shared by runs and `audioeval build` (argparse only: `--help` stays fast)."""

from __future__ import annotations

import argparse


def add_augment_arguments(p: argparse.ArgumentParser) -> None:
    """--augment and --augment_target, shared by runs and `audioeval build`."""
    p.add_argument(
        "--augment",
        action="append",
        default=[],
        metavar="NAME[=LEVEL,...]",
        help="degrade the clips with a transform (repeat to chain; several levels make a sweep, each "
        "evaluated beside the clean run), e.g. noise_snr=30,20,10,0; `--augment list` shows them all",
    )
    p.add_argument(
        "--augment_target",
        help="which clips --augment degrades: query (default), demos or all",
    )
