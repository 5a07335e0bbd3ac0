"""`audioeval build` (datasets to a Hub-layout folder) and `audioeval push` (that folder to the Hub).

The folder holds one sub-folder of parquet shards per builder config, a README.md dataset card whose
YAML header lists the configs, so `datasets.load_dataset(DIR, "<config>")` reads it offline and the Hub
shows the same configs after a push, and an eval.yaml declaring the benchmark's leaderboards on the Hub.
The build writes into a temporary folder and renames it on success: a failed or interrupted build leaves
nothing half-written at the destination.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from audioeval.augment.build import degraded_builders
from audioeval.augment.plan import CONDITION_SEPARATOR, parse_augment
from audioeval.config.fields import Arg, FieldProblem, check_values, description, takes
from audioeval.data.builders import builder_config_names, builder_names, load_builder_class, make_builder
from audioeval.data.card import GENERATION_FLAGS, Build, ConfigStats, card_text, public_parameters, read_card
from audioeval.data.destination import fresh_destination, written_through_staging
from audioeval.data.eval_yaml import EVAL_YAML, LeaderboardProbe, eval_yaml_text
from audioeval.errors import AudioEvalError, UsageError, unknown_name_message
from audioeval.kvargs import FlagParser, parse_kv
from audioeval.redact import register_secret

log = logging.getLogger("audioeval")
#: the numbers `audioeval build` takes as flags (and in --builder_args), declared once: the flags' help and the
#: checks before any work come from here. The largest keep a typo (an extra 000) from running for days.
BUILD_NUMBERS: dict[str, Any] = {
    "n_episodes": Annotated[int, Arg("episodes per config", ge=1, le=1_000_000)],
    "max_shots": Annotated[int, Arg("demonstrations per episode", ge=0, le=1_000)],
    "seed": Annotated[int, Arg("episode seed", ge=0, le=2**32 - 1)],
}
SHARD_BYTES = 256 * 1024 * 1024
ROW_GROUP_ROWS = 100  # datasets' row group size for audio data
ROW_GROUP_BYTES = 64 * 1024 * 1024


def build_parser() -> argparse.ArgumentParser:
    p = FlagParser(prog="audioeval build", description="Write a benchmark as a Hub-layout dataset folder.")
    p.add_argument(
        "benchmark",
        help=f"a builder in datasets_builders/ ({', '.join(builder_names())}) or a builder .py file",
    )
    p.add_argument(
        "--output_dir",
        help="destination folder (must not exist, or pass --overwrite); default ./<benchmark>, which "
        'load_dataset("<benchmark>", config) then loads from that folder as is',
    )
    p.add_argument("--configs", help="comma list of builder configs (default: all)")
    for flag, declared in BUILD_NUMBERS.items():
        p.add_argument(f"--{flag}", type=int, help=f"{description(declared)}: {takes(declared)}")
    p.add_argument("--builder_args", default="", help="other builder arguments: key=value,...")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument(
        "--include_path",
        action="append",
        default=[],
        help="extra folder of task YAML files, as for a run: the tasks that read this builder besides the shipped "
        "ones (a builder .py file has only these); eval.yaml declares their leaderboards",
    )
    from audioeval.augment.arguments import add_augment_arguments

    add_augment_arguments(
        p
    )  # degraded copies: one Hub config per (config, condition), `<config>@<condition>`
    return p


def push_parser() -> argparse.ArgumentParser:
    p = FlagParser(prog="audioeval push", description="Upload a folder made by `audioeval build` to the Hub.")
    p.add_argument("folder")
    p.add_argument(
        "--repo_id",
        required=True,
        help="org/name of the dataset repository (token: `hf auth login` or HF_TOKEN, as huggingface_hub finds it)",
    )
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision", help="branch to push to (default: main)")
    p.add_argument("--commit_message", default="Upload dataset built with audioeval")
    return p


def build_command(
    benchmark: str,
    configs: list[str],
    generation: dict[str, Any],
    augment: tuple[list[str], str] | None = None,
) -> str:
    """The `audioeval build` command line that reproduces a folder; local paths appear as placeholders."""
    parts = [f"audioeval build {benchmark} --output_dir <folder> --configs {','.join(configs)}"]
    parts += [f"--{flag} {generation[flag]}" for flag in GENERATION_FLAGS if generation.get(flag) is not None]
    others = [f"{k}={v}" for k, v in generation["parameters"].items()]
    others += [
        f"{k}=<{source.removesuffix(' (a local copy)')}>" for k, source in generation["sources"].items()
    ]
    if others:
        parts.append("--builder_args '" + ",".join(others) + "'")
    if augment is not None:
        parts += [f"--augment {flag}" for flag in augment[0]] + (
            [f"--augment_target {augment[1]}"] if augment[1] else []
        )
    return " ".join(parts)


def library_versions() -> dict[str, str]:
    import datasets

    from audioeval.version import __version__

    return {"audioeval": __version__, "datasets": datasets.__version__}


class _ShardWriter:
    """Writes encoded rows into parquet shards of about SHARD_BYTES, in row groups of at most ROW_GROUP_ROWS rows
    or ROW_GROUP_BYTES (as `datasets` does for audio), so a reader can fetch one episode without a whole shard."""

    def __init__(self, out_dir: Path, split: str, schema: pa.Schema) -> None:
        self.out_dir, self.split, self.schema = out_dir, split, schema
        self.shards: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.buffer: list[dict[str, Any]] = []
        self.buffer_bytes = self.shard_bytes = 0
        self.arrow_bytes = 0  # the rows' size in Arrow format (dataset_info's num_bytes)

    def add(self, encoded: dict[str, Any]) -> None:
        self.buffer.append(encoded)
        self.buffer_bytes += _approx_bytes(encoded)
        if len(self.buffer) >= ROW_GROUP_ROWS or self.buffer_bytes >= ROW_GROUP_BYTES:
            self._write_row_group()
        if self.shard_bytes >= SHARD_BYTES:
            self._close_shard()

    def _write_row_group(self) -> None:
        if not self.buffer:
            return
        if self.writer is None:
            path = self.out_dir / f"{self.split}-{len(self.shards):05d}.parquet.part"
            self.shards.append(path)
            self.writer = pq.ParquetWriter(path, self.schema)
        table = pa.Table.from_pylist(self.buffer, schema=self.schema)
        self.writer.write_table(table, row_group_size=len(self.buffer))
        self.arrow_bytes += table.nbytes
        self.shard_bytes += self.buffer_bytes
        self.buffer, self.buffer_bytes = [], 0

    def _close_shard(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer, self.shard_bytes = None, 0

    def finish(self) -> int:
        """Closes the last shard, names the shards `<split>-i-of-n.parquet`; returns their total size."""
        self._write_row_group()
        self._close_shard()
        size = 0
        for i, path in enumerate(self.shards):
            final = self.out_dir / f"{self.split}-{i:05d}-of-{len(self.shards):05d}.parquet"
            path.rename(final)
            size += final.stat().st_size
        return size


def _write_config(builder: Any, out_dir: Path, begun: Begun | None = None) -> ConfigStats:
    """Stream every split's rows into parquet shards; returns what the card states about them. `begun`: the
    first split's rows the estimate made already, written as they are, and that split's rows after them."""
    import datasets

    features: datasets.Features = builder.info.features
    out_dir.mkdir(parents=True)
    rows = arrow_bytes = download_size = 0
    split = "test"
    for split_gen in builder._split_generators(None):
        split = str(split_gen.name)
        writer = _ShardWriter(out_dir, split, features.arrow_schema)
        made: list[dict[str, Any]] = []
        if begun is not None and begun.split == split:
            made, examples, begun = begun.encoded, begun.rest, None
        else:
            examples = builder._generate_examples(**split_gen.gen_kwargs)
        encoded = chain(made, (features.encode_example(row) for _key, row in examples))
        total = int(builder.num_episodes())
        for row in tqdm(encoded, total=total, desc=f"{builder.config.name}/{split}", unit="row"):
            writer.add(row)
            rows += 1
        download_size += writer.finish()
        arrow_bytes += writer.arrow_bytes
    return ConfigStats(features, split, rows, arrow_bytes, download_size)


def _approx_bytes(obj: Any) -> int:
    if isinstance(obj, bytes | str):
        return len(obj)
    if isinstance(obj, dict):
        return sum(_approx_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_approx_bytes(v) for v in obj)
    return 8


def cmd_build(argv: list[str], leaderboard: LeaderboardProbe | None = None) -> int:
    """`audioeval build`; with `leaderboard`, the folder also gets the eval.yaml declaring the leaderboard tasks
    the probe finds (the command line passes the one that runs the benchmark's tasks on the staged folder)."""
    args = build_parser().parse_args(argv)
    given = {k: getattr(args, k) for k in BUILD_NUMBERS if getattr(args, k) is not None}
    _check_numbers(given, "--{key} {words}.")
    cls = _builder_class(args)
    configs = _chosen_configs(args, cls)
    kwargs = parse_kv(args.builder_args, "--builder_args")
    _check_numbers({k: v for k, v in kwargs.items() if k in BUILD_NUMBERS}, "--builder_args {key}: {words}.")
    for key in ("n_episodes", "max_shots", "seed"):
        if getattr(args, key) is not None:
            kwargs[key] = getattr(args, key)
    for folder in args.include_path:
        if not Path(folder).is_dir():
            raise UsageError(f"--include_path {folder}: not a folder of task YAML files.")
    destination = _destination(args)
    builders = _checked_builders(args, cls, configs, kwargs)
    plan = parse_augment(args.augment, args.augment_target)
    builders = degraded_builders(builders, plan)
    started = time.perf_counter()
    about = getattr(cls, "ABOUT", None)
    generation = public_parameters(next(iter(builders.values())).config, kwargs, about)
    generation["builder_version"] = str(cls.VERSION)
    if plan is not None:  # degraded copies: which conditions the <config>@<condition> configs hold
        generation["augment"] = plan.record()
    begun = _say_estimate(args.benchmark, builders, destination)
    stats, leaderboards = _write_folder(args, cls, builders, generation, destination, leaderboard, begun)
    written = sum(s.download_size or 0 for s in stats.values())
    print(
        f"wrote {sum(s.num_examples for s in stats.values())} rows in {len(stats)} config(s) "
        f"({_size(written)}) to {destination} in {time.perf_counter() - started:.1f}s"
    )
    if leaderboards:
        print(leaderboards)
    print(_loading_hint(destination, next(iter(stats))))
    return 0


SAMPLE_ROWS = 4  # rows of each config made up front to estimate the build (the first also warms up)


@dataclass
class Begun:
    """A config's first rows, made and encoded for the estimate, and the rest of their split still to make:
    the build writes these rows and goes on from there (nothing is made twice)."""

    split: str
    encoded: list[dict[str, Any]]
    rest: Iterator[tuple[Any, dict[str, Any]]]


def _say_estimate(benchmark: str, builders: dict[str, Any], destination: Path) -> dict[str, Begun]:
    """Before any writing: how many rows, about how many bytes and how long, from a few rows of each config
    made and encoded as the build makes them, and a warning when the destination's file system has less room
    than that. Returns those rows, begun, for the build to write."""
    rows = 0
    size = seconds = 0.0
    begun = {}
    for config, builder in builders.items():
        n, per_row_bytes, per_row_s, started = _sample(builder)
        if started is not None:
            begun[config] = started
        rows += n
        size += n * per_row_bytes
        seconds += n * per_row_s
    name = Path(benchmark).stem
    log.info(
        "building %s: %d config(s), %d rows; estimated %s and %s (from the first %d rows of each config)",
        name, len(builders), rows, _size(size), _duration(seconds), SAMPLE_ROWS,
    )  # fmt: skip
    free = shutil.disk_usage(destination.parent if destination.parent.exists() else Path.cwd()).free
    if size > free:
        log.warning(
            "only %s free on the file system of %s, and this build needs about %s: free space or choose "
            "another --output_dir.",
            _size(free), destination.parent, _size(size),
        )  # fmt: skip
    return begun


def _sample(builder: Any) -> tuple[int, float, float, Begun | None]:
    """(rows the config writes, parquet bytes per row, seconds per row, the rows begun) from its first rows,
    made, encoded and compressed as the build does it."""
    features = builder.info.features
    total = int(builder.num_episodes())
    encoded: list[dict[str, Any]] = []
    times: list[float] = []
    clock = time.perf_counter()
    begun = None
    for split_gen in builder._split_generators(None):
        examples = builder._generate_examples(**split_gen.gen_kwargs)
        begun = Begun(str(split_gen.name), encoded, examples)
        for _key, row in examples:
            encoded.append(features.encode_example(row))
            now = time.perf_counter()
            times.append(now - clock)
            clock = now
            if len(encoded) >= min(SAMPLE_ROWS, total):
                break
        break
    if not encoded:
        return total, 0.0, 0.0, begun
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(encoded, schema=features.arrow_schema), sink)
    timed = times[1:] or times  # the first row pays for imports and loaded sources
    return total, sink.tell() / len(encoded), sum(timed) / len(timed), begun


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} bytes"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _check_numbers(values: dict[str, Any], message: str) -> None:
    try:
        check_values(values, BUILD_NUMBERS)
    except FieldProblem as problem:
        raise UsageError(message.format(key=problem.key, words=problem.words)) from None


def _loading_hint(destination: Path, config: str) -> str:
    """How to load what was written: a folder in the working directory loads by its bare name."""
    name = destination.name if destination.parent == Path.cwd().resolve() else str(destination)
    return f'load it: from datasets import load_dataset; load_dataset("{name}", "{config}")'


def _builder_class(args: argparse.Namespace) -> Any:
    """The builder the command names (a datasets_builders/ folder or a .py file); a file's path made absolute."""
    available = builder_names()
    if args.benchmark not in available and not args.benchmark.endswith(".py"):
        raise UsageError("audioeval build: " + unknown_name_message("benchmark", args.benchmark, available))
    if args.benchmark.endswith(".py"):
        args.benchmark = str(Path(args.benchmark).resolve())
    return load_builder_class(args.benchmark)


def _chosen_configs(args: argparse.Namespace, cls: Any) -> list[str]:
    all_configs = builder_config_names(cls)
    configs = [c.strip() for c in args.configs.split(",")] if args.configs else all_configs
    for c in configs:
        if c not in all_configs:
            raise UsageError(
                "--configs: " + unknown_name_message(f"config of {args.benchmark}", c, all_configs)
            )
    return configs


def _destination(args: argparse.Namespace) -> Path:
    # default: a folder named like the benchmark, which datasets.load_dataset("<benchmark>") finds by name
    return fresh_destination(
        "--output_dir", Path(args.output_dir or Path(args.benchmark).stem), args.overwrite
    )


def _checked_builders(
    args: argparse.Namespace, cls: Any, configs: list[str], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Every config's builder, its arguments and source folders checked before anything is generated."""
    builders = {}
    for c in configs:
        config_kwargs = {k: v for k, v in kwargs.items() if _accepts(cls, k)}
        builders[c] = make_builder(
            args.benchmark, c, config_kwargs, source=f"audioeval build {args.benchmark}"
        )
    unused = [k for k in kwargs if not _accepts(cls, k)]
    if unused:
        raise UsageError(f"audioeval build {args.benchmark}: the builder takes no argument {unused[0]!r}.")
    return builders


def _write_folder(
    args: argparse.Namespace,
    cls: Any,
    builders: dict[str, Any],
    generation: dict[str, Any],
    destination: Path,
    leaderboard: LeaderboardProbe | None,
    begun: dict[str, Begun] | None = None,
) -> tuple[dict[str, ConfigStats], str]:
    """Every config's shards, the card and the eval.yaml, written into a staging folder renamed to `destination`
    on success: a failed or interrupted (Ctrl-C, SIGTERM) build leaves nothing half-written there. Also what the
    eval.yaml step has to say."""
    with written_through_staging("--output_dir", destination, "building") as staging:
        stats, build = _write_staging(args, cls, builders, generation, staging, begun or {})
        said = _write_eval_yaml(staging, args, build, leaderboard) if leaderboard else ""
    return stats, said


def _write_staging(
    args: argparse.Namespace,
    cls: Any,
    builders: dict[str, Any],
    generation: dict[str, Any],
    staging: Path,
    begun: dict[str, Begun],
) -> tuple[dict[str, ConfigStats], Build]:
    """Every config's shards and the dataset card, into `staging`; also what the card says."""
    benchmark = Path(args.benchmark).stem
    stats = {c: _write_config(b, staging / c, begun.get(c)) for c, b in builders.items()}
    augment = (args.augment, args.augment_target) if args.augment else None
    base_configs = list(dict.fromkeys(c.split(CONDITION_SEPARATOR)[0] for c in builders))
    build = Build(
        benchmark,
        getattr(cls, "ABOUT", None),
        (cls.__doc__ or "").strip(),
        stats,
        generation,
        library_versions(),
        build_command(benchmark, base_configs, generation, augment),
    )
    (staging / "README.md").write_text(card_text(build), encoding="utf-8")
    return stats, build


def _write_eval_yaml(
    staging: Path, args: argparse.Namespace, build: Build, leaderboard: LeaderboardProbe
) -> str:
    """The eval.yaml declaring the leaderboard tasks a run of the benchmark's tasks on the staged folder reports
    (see data/eval_yaml.py), and the line saying so; a folder no such run can read gets none, with a warning
    saying why."""
    configs = [c for c in build.stats if CONDITION_SEPARATOR not in c]
    try:
        tasks = leaderboard(staging, args.benchmark, configs, args.include_path)
    except AudioEvalError as err:
        log.warning(
            "no %s written (it declares the Hub leaderboards of the benchmark): a run of %s's tasks on this "
            "folder stops with: %s", EVAL_YAML, build.benchmark, err,
        )  # fmt: skip
        return ""
    if not tasks:
        log.warning(
            "no %s written (it declares the Hub leaderboards of the benchmark): no task reads %s; pass "
            "--include_path with the folder of the task YAML files that do",
            EVAL_YAML, build.benchmark,
        )  # fmt: skip
        return ""
    name = build.about.pretty_name if build.about else build.benchmark
    description = build.about.summary if build.about else build.description
    splits = {c: s.split for c, s in build.stats.items()}
    (staging / EVAL_YAML).write_text(eval_yaml_text(name, description, tasks, splits), encoding="utf-8")
    return f"{EVAL_YAML}: {len(tasks)} leaderboard task(s), one per number `audioeval push-results` publishes"


def _accepts(cls: Any, key: str) -> bool:
    import inspect

    return key in inspect.signature(cls.BUILDER_CONFIG_CLASS).parameters


def cmd_push(argv: list[str]) -> int:
    args = push_parser().parse_args(argv)
    folder = Path(args.folder).expanduser().resolve()
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "no such folder"
        raise UsageError(f"audioeval push: {folder}: {what}; give the folder `audioeval build` wrote.")
    read_card(folder, f"audioeval push: {folder}")  # a built folder: a card that declares its configs
    if "/" not in args.repo_id:
        raise UsageError(f"--repo_id {args.repo_id!r}: expected org/name.")
    from huggingface_hub import HfApi, get_token

    # the token comes the way huggingface_hub finds it: HF_TOKEN, or the one `hf auth login` saved
    token = get_token()
    if not token:
        raise UsageError(
            "audioeval push: no Hugging Face token. Run `hf auth login` (or set HF_TOKEN in the environment); "
            "the token is never printed or written."
        )
    register_secret(token)  # a hub error that quotes it is masked like any other
    api = HfApi()
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
        refused = EVAL_YAML in str(err) and (folder / EVAL_YAML).is_file()
        what_to_do = (
            f"; the Hub validates {EVAL_YAML} (the benchmark's leaderboards) at push time: remove "
            f"{folder / EVAL_YAML} to push the data without leaderboards (docs/hub_results.md)"
            if refused
            else ""
        )
        raise UsageError(
            f"audioeval push: upload to {args.repo_id} failed: {type(err).__name__}: {err}{what_to_do}"
        ) from err
    print(f"pushed {folder} to https://huggingface.co/datasets/{args.repo_id} ({getattr(info, 'oid', '')})")
    return 0
