"""Episodes read from data instead of synthesized: `--task_args dataset=DIR_or_org/name` on any task.

The folder (or Hub dataset) is what `audioeval build` writes: a dataset card whose `configs:` name parquet files
per config and split. The task's builder config and split select the files; their schema must carry every field
the builder's Hub layout has (`features_for_hub()`); the builder turns each row back into the episode it was made
from (`EpisodeBuilder.episode_reader`), so a run on the data gives the same requests, and the same results, as
a run that synthesizes the episodes with the build's seed. Rows are read one parquet row group at a time.
"""

from __future__ import annotations

import bisect
import glob
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from audioeval.data.card import feature_paths, read_card
from audioeval.data.stored import DatasetLocation, locate
from audioeval.errors import DataError, unknown_name_message

log = logging.getLogger("audioeval")


def _damaged(path: Path, error: Exception) -> DataError:
    return DataError(
        f"{path}: not a readable parquet file ({error}); it may be truncated or damaged: build or download the "
        "dataset again."
    )


class ParquetRows:
    """The rows of one config and split, by position, read lazily one row group at a time."""

    def __init__(self, files: list[Path], keep: int = 2) -> None:
        import pyarrow.parquet as pq

        self.files = files
        self._groups: list[tuple[Path, int, int]] = []  # (file, row group, first row)
        total = 0
        for path in files:
            try:
                meta = pq.ParquetFile(path).metadata
            except (
                OSError,
                ValueError,
            ) as error:  # pyarrow's ArrowInvalid is a ValueError, its IOError an OSError
                raise _damaged(path, error) from None
            for group in range(meta.num_row_groups):
                self._groups.append((path, group, total))
                total += meta.row_group(group).num_rows
        self._total = total
        self._starts = [first for _, _, first in self._groups]
        self._cache: OrderedDict[tuple[Path, int], list[dict[str, Any]]] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._total

    def schema(self) -> Any:
        import pyarrow.parquet as pq

        try:
            return pq.read_schema(self.files[0])
        except (OSError, ValueError) as error:
            raise _damaged(self.files[0], error) from None

    def column(self, name: str) -> list[Any]:
        import pyarrow.parquet as pq

        values: list[Any] = []
        for path in self.files:
            try:
                values += pq.read_table(path, columns=[name]).column(name).to_pylist()
            except (OSError, ValueError) as error:
                raise _damaged(path, error) from None
        return values

    def row(self, position: int) -> dict[str, Any]:
        if not 0 <= position < self._total:
            raise IndexError(f"row {position} is out of range: the data holds {self._total} rows")
        path, number, first = self._groups[bisect.bisect_right(self._starts, position) - 1]
        with self._lock:
            rows = self._cache.get((path, number))
            if rows is None:
                import pyarrow.parquet as pq

                try:
                    rows = pq.ParquetFile(path).read_row_group(number).to_pylist()
                except (OSError, ValueError) as error:
                    raise _damaged(path, error) from None
                self._cache[(path, number)] = rows
                while len(self._cache) > self._keep:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end((path, number))
        return rows[position - first]


class DatasetEpisodes:
    """A builder's episodes as stored in a dataset: the same interface the harness uses on a builder
    (`episode`, `num_episodes`, `max_supported_shots`, `describe`); anything else is the builder's."""

    def __init__(self, builder: Any, location: DatasetLocation, benchmark: str, split: str) -> None:
        self.builder = builder
        self.location = location
        self.what = f"--task_args dataset={location.spec}"
        self.card = read_card(location.folder, self.what)
        self._check_benchmark(benchmark)
        self.config_name = str(builder.config.name)
        self.split = split
        self._opened: dict[str, ParquetRows] = {}
        self._revision: dict[str, Any] | None = None
        self.rows = self._open(self.config_name, expected=builder.features_for_hub())
        self._read = builder.episode_reader(self._open)
        first = self.rows.row(0) if len(self.rows) else None
        if first is not None and int(first.get("index", 0)) != 0:
            raise DataError(
                f"{self.what}: the first row of config {self.config_name!r} has index {first['index']}, not 0."
            )

    # --- opening -----------------------------------------------------------------------------------------------
    def _check_benchmark(self, benchmark: str) -> None:
        built = (self.card.generation or {}).get("benchmark")
        if built is not None and built != benchmark:
            raise DataError(
                f"{self.what}: {self.location.describe()} holds episodes of {built!r}, but this task's builder is "
                f"{benchmark!r}. Point the task at a build of {benchmark}."
            )

    def _open(self, config: str, expected: Any = None) -> ParquetRows:
        if config in self._opened:
            return self._opened[config]
        declared = self.card.configs
        if config not in declared:
            raise DataError(
                f"{self.what}: "
                + unknown_name_message(
                    f"config (the card of {self.location.describe()} declares {', '.join(declared)})",
                    config,
                    declared,
                    "The task reads the config named like its builder config; build it with "
                    "`audioeval build <benchmark> --configs ...`.",
                )
            )
        splits = declared[config]
        if self.split not in splits:
            raise DataError(
                f"{self.what}: config {config!r} has no split {self.split!r} (its card declares "
                f"{', '.join(splits)}); set the task's `split:` to one of them."
            )
        patterns = splits[self.split]
        self.location.fetch(patterns)
        files = sorted(
            {Path(p) for pattern in patterns for p in glob.glob(str(self.location.folder / pattern))}
        )
        if not files:
            raise DataError(
                f"{self.what}: no data file matches {', '.join(patterns)} (config {config!r}, split "
                f"{self.split!r}) in {self.location.describe()}."
            )
        rows = ParquetRows(files)
        if expected is None:
            expected = self.builder.features_for_hub() if config == self.config_name else None
        if expected is not None:
            _check_features(rows, expected, f"{self.what} config {config!r} ({files[0].name})")
        self._opened[config] = rows
        return rows

    # --- the builder interface ------------------------------------------------------------------------------
    def num_episodes(self) -> int:
        return len(self.rows)

    def episode(self, index: int) -> dict[str, Any]:
        row = self.rows.row(int(index))
        if "index" in row and int(row["index"]) != int(index):
            raise DataError(
                f"{self.what}: row {index} of config {self.config_name!r} holds episode {row['index']}; "
                "the rows must be in episode order (as `audioeval build` writes them)."
            )
        return self._read(row)

    def max_supported_shots(self) -> int | None:
        return None  # what the stored episodes carry; the preflight reads it from episode 0

    def describe(self, index: int) -> dict[str, Any]:
        episode = self.episode(index)
        return {"id": episode["id"], **(episode.get("metadata") or {})}

    def revision(self) -> dict[str, Any]:
        """What the run read: source, commit sha (Hub) or content SHA-256 (folder), config, split, rows and
        the card's generation parameters."""
        if self._revision is None:
            self._revision = self._make_revision()
        return self._revision

    def _make_revision(self) -> dict[str, Any]:
        files = [self.card.path] + [f for rows in self._opened.values() for f in rows.files]
        record = {
            "source": self.location.spec,
            **self.location.revision(files),
            "config": self.config_name,
            "split": self.split,
            "rows": len(self.rows),
        }
        if self.card.generation:
            record["generation"] = self.card.generation
        return record

    def __getattr__(self, name: str) -> Any:  # the builder's other attributes (config, ABOUT, ...)
        if name == "builder":
            raise AttributeError(name)
        return getattr(self.builder, name)


def _check_features(rows: ParquetRows, expected: Any, where: str) -> None:
    """Every field of the builder's Hub layout is in the data, with the same kind; extra fields are fine."""
    import datasets

    found = dict(feature_paths(datasets.Features.from_arrow_schema(rows.schema())))
    for path, kind in feature_paths(expected):
        have = found.get(path)
        if have is None:
            raise DataError(
                f"{where}: field `{path}` ({kind}) is missing: these are not the episodes this task reads "
                "(the data was not written by `audioeval build` for this benchmark)."
            )
        if _kind(have) != _kind(kind):
            raise DataError(f"{where}: field `{path}` is {have}, expected {kind}.")


def _kind(kind: str) -> str:
    """What a reader relies on: audio of any rate, integers and floats of any width, strings of any size."""
    if kind.startswith("audio"):
        return "audio"
    if kind.startswith(("int", "uint")):
        return "integer"
    if kind.startswith("float"):
        return "float"
    return "string" if kind in ("string", "large_string") else kind


def open_episodes(builder: Any, spec: str, benchmark: str, split: str, known_names: list[str]) -> Any:
    """The episodes a task evaluates: the builder itself when `spec` names the benchmark, else the data."""
    if spec == benchmark:
        return builder
    if spec in known_names and not Path(spec).is_dir():
        raise DataError(
            f"--task_args dataset={spec}: that is another benchmark; this task's episodes are {benchmark}'s. "
            f"Give dataset={benchmark} (or leave it out) to generate them, or a folder or Hub id holding them."
        )
    return DatasetEpisodes(builder, locate(spec, known_names), benchmark, split)
