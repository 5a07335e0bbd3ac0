"""`audioeval build` (datasets to a Hub-layout folder) and `audioeval push` (that folder to the Hub).

The folder holds one sub-folder of parquet shards per builder config and a README.md dataset card whose
YAML header lists the configs, so `datasets.load_dataset(DIR, "<config>")` reads it offline and the Hub
shows the same configs after a push. The build writes into a temporary folder and renames it on success:
a failed or interrupted build leaves nothing half-written at the destination.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from audioeval.augment.build import degraded_builders
from audioeval.augment.plan import CONDITION_SEPARATOR, parse_augment
from audioeval.builders import builder_config_names, load_builder_class, make_builder
from audioeval.errors import UsageError, unknown_name_message
from audioeval.kvargs import parse_kv
from audioeval.resources import builders_dir

log = logging.getLogger("audioeval")
SHARD_BYTES = 256 * 1024 * 1024
TOKEN_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="audioeval build", description="Write a benchmark as a Hub-layout dataset folder."
    )
    p.add_argument(
        "benchmark",
        help="a builder in datasets_builders/ (audioicl_bench, alice, adu_bench) or a builder .py file",
    )
    p.add_argument(
        "--output_dir", required=True, help="destination folder (must not exist, or pass --overwrite)"
    )
    p.add_argument("--configs", help="comma list of builder configs (default: all)")
    p.add_argument("--n_episodes", type=int, help="episodes per config")
    p.add_argument("--max_shots", type=int, help="demonstrations per episode")
    p.add_argument("--seed", type=int, help="episode seed")
    p.add_argument("--builder_args", default="", help="other builder arguments: key=value,...")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    from audioeval.cli import add_augment_arguments

    add_augment_arguments(
        p
    )  # degraded copies: one Hub config per (config, condition), `<config>@<condition>`
    return p


def push_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="audioeval push", description="Upload a folder made by `audioeval build` to the Hub."
    )
    p.add_argument("folder")
    p.add_argument("--repo_id", required=True, help="org/name of the dataset repository")
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (default: main)")
    p.add_argument("--commit_message", default="Upload dataset built with audioeval")
    return p


def _available_builders() -> list[str]:
    root = builders_dir()
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file()) if root.is_dir() else []


def build_command(
    benchmark: str, configs: list[str], kwargs: dict[str, Any], augment: tuple[list[str], str] | None = None
) -> str:
    """The `audioeval build` command line that reproduces a folder."""
    parts = [f"audioeval build {benchmark} --output_dir <folder> --configs {','.join(configs)}"]
    flags = ("n_episodes", "max_shots", "seed")
    parts += [f"--{k} {kwargs[k]}" for k in flags if k in kwargs]
    others = {k: v for k, v in kwargs.items() if k not in flags}
    if others:
        parts.append("--builder_args '" + ",".join(f"{k}={v}" for k, v in others.items()) + "'")
    if augment is not None:
        parts += [f"--augment {flag}" for flag in augment[0]] + [f"--augment_target {augment[1]}"]
    return " ".join(parts)


def _card(
    benchmark: str,
    configs: list[str],
    counts: dict[str, int],
    kwargs: dict[str, Any],
    description: str,
    augment: tuple[list[str], str] | None = None,
) -> str:
    lines = ["---", "configs:"]
    for name in configs:
        lines += [
            f"- config_name: {name}",
            "  data_files:",
            "  - split: test",
            f"    path: {name}/test-*.parquet",
        ]
    lines += ["tags:", "- audio", "- audioeval", "---", "", f"# {benchmark}", ""]
    lines += [description.strip() or f"Built with audioeval from the `{benchmark}` builder.", ""]
    lines += [
        "## How this folder was built",
        "",
        "```",
        build_command(
            benchmark, list(dict.fromkeys(c.split(CONDITION_SEPARATOR)[0] for c in configs)), kwargs, augment
        ),
        "```",
        "",
    ]
    lines += ["| config | rows |", "|---|---|"] + [f"| {c} | {counts[c]} |" for c in configs] + [""]
    lines += [
        'Load it offline with `datasets.load_dataset("<this folder>", "<config>")`, or from the Hub with',
        '`datasets.load_dataset("<org>/<name>", "<config>")` after `audioeval push`.',
        "",
    ]
    return "\n".join(lines)


class _ShardWriter:
    """Accumulates encoded rows and writes a parquet shard whenever about SHARD_BYTES have gathered."""

    def __init__(self, out_dir: Path, split: str, schema: pa.Schema) -> None:
        self.out_dir, self.split, self.schema = out_dir, split, schema
        self.shards: list[Path] = []
        self.buffer: list[dict[str, Any]] = []
        self.size = 0

    def add(self, encoded: dict[str, Any]) -> None:
        self.buffer.append(encoded)
        self.size += _approx_bytes(encoded)
        if self.size >= SHARD_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        path = self.out_dir / f"{self.split}-{len(self.shards):05d}.parquet.part"
        pq.write_table(pa.Table.from_pylist(self.buffer, schema=self.schema), path)
        self.shards.append(path)
        self.buffer, self.size = [], 0

    def finish(self) -> None:
        self.flush()
        for i, path in enumerate(self.shards):
            path.rename(self.out_dir / f"{self.split}-{i:05d}-of-{len(self.shards):05d}.parquet")


def _write_config(builder: Any, out_dir: Path) -> int:
    """Stream every split's rows into parquet shards; returns the row count."""
    import datasets

    features: datasets.Features = builder.info.features
    out_dir.mkdir(parents=True)
    total = 0
    for split_gen in builder._split_generators(None):
        writer = _ShardWriter(out_dir, str(split_gen.name), features.arrow_schema)
        rows = builder._generate_examples(**split_gen.gen_kwargs)
        for _key, row in tqdm(rows, desc=f"{builder.config.name}/{split_gen.name}", unit="row"):
            writer.add(features.encode_example(row))
            total += 1
        writer.finish()
    return total


def _approx_bytes(obj: Any) -> int:
    if isinstance(obj, bytes | str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(_approx_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_approx_bytes(v) for v in obj)
    return 8


def cmd_build(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    available = _available_builders()
    if args.benchmark not in available and not args.benchmark.endswith(".py"):
        raise UsageError("audioeval build: " + unknown_name_message("benchmark", args.benchmark, available))
    if args.benchmark.endswith(".py"):
        args.benchmark = str(Path(args.benchmark).resolve())
    cls = load_builder_class(args.benchmark)
    all_configs = builder_config_names(cls)
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else all_configs
    for c in configs:
        if c not in all_configs:
            raise UsageError(
                "--configs: " + unknown_name_message(f"config of {args.benchmark}", c, all_configs)
            )
    kwargs = parse_kv(args.builder_args, "--builder_args")
    for key in ("n_episodes", "max_shots", "seed"):
        if getattr(args, key) is not None:
            kwargs[key] = getattr(args, key)

    destination = Path(args.output_dir).expanduser().resolve()
    if destination.exists() and any(destination.iterdir()) and not args.overwrite:
        raise UsageError(
            f"--output_dir {destination} exists and is not empty; choose another folder or pass --overwrite."
        )
    # Check every config (arguments, source folders) before generating anything.
    builders = {}
    for c in configs:
        config_kwargs = {k: v for k, v in kwargs.items() if _accepts(cls, k)}
        builders[c] = make_builder(
            args.benchmark, c, config_kwargs, source=f"audioeval build {args.benchmark}"
        )
    unused = [k for k in kwargs if not _accepts(cls, k)]
    if unused:
        raise UsageError(f"audioeval build {args.benchmark}: the builder takes no argument {unused[0]!r}.")
    builders = degraded_builders(builders, parse_augment(args.augment, args.augment_target))

    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"--output_dir {destination}: cannot create it ({err.strerror or err}).") from err
    staging = destination.parent / f".{destination.name}.building-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    started = time.perf_counter()
    try:
        counts = {c: _write_config(b, staging / c) for c, b in builders.items()}
        description = (cls.__doc__ or "").strip()
        augment = (args.augment, args.augment_target) if args.augment else None
        (staging / "README.md").write_text(
            _card(Path(args.benchmark).stem, list(builders), counts, kwargs, description, augment)
        )
        if destination.exists():
            shutil.rmtree(destination)
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(
        f"wrote {sum(counts.values())} rows in {len(counts)} config(s) to {destination} "
        f"in {time.perf_counter() - started:.1f}s"
    )
    return 0


def _accepts(cls: Any, key: str) -> bool:
    import inspect

    return key in inspect.signature(cls.BUILDER_CONFIG_CLASS).parameters


def _token() -> str:
    for name in TOKEN_ENV:
        if os.environ.get(name):
            return os.environ[name]
    raise UsageError(
        "audioeval push: no Hub token. Set HF_TOKEN in the environment (it is never printed or written)."
    )


def cmd_push(argv: list[str]) -> int:
    args = push_parser().parse_args(argv)
    folder = Path(args.folder).expanduser().resolve()
    card = folder / "README.md"
    if not card.is_file() or "configs:" not in card.read_text():
        raise UsageError(
            f"audioeval push: {folder} is not a folder made by `audioeval build` (no README.md with configs)."
        )
    if "/" not in args.repo_id:
        raise UsageError(f"--repo_id {args.repo_id!r}: expected org/name.")
    from huggingface_hub import HfApi

    api = HfApi(token=_token())
    try:
        api.create_repo(args.repo_id, repo_type="dataset", private=args.private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=args.repo_id,
            repo_type="dataset",
            revision=args.revision,
            commit_message=args.commit_message,
        )
    except Exception as err:  # noqa: BLE001 - report hub failures without a traceback
        raise UsageError(
            f"audioeval push: upload to {args.repo_id} failed: {type(err).__name__}: {err}"
        ) from err
    print(f"pushed {folder} to https://huggingface.co/datasets/{args.repo_id} ({getattr(info, 'oid', '')})")
    return 0
