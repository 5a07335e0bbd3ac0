"""ALICE: audio in-context learning under output-format constraints (Speech-IFEval tasks ASR, SER, GR, MMAU;
closed-ended constraints and chain-of-thought). One config per task x category (e.g. `asr_ceq`), plus
`demo_pool`, the demonstration pool on its own (for the Hub export).

An episode is one test item (audio, task question, constraint sentence, constraint id and kwargs, label)
with up to `max_shots` demonstrations of the same task and category (same constraint id for CEQ, same
sub-category for MMAU), in the item's shuffled order; the k-shot prompt uses the first k.

Data: the built-in corpus synthesized with eSpeak NG (default), or a local Speech-IFEval / ALICE copy given
with `data_dir` (see docs/alice.md for the layout).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import datasets

from audioeval.benchmarks.alice import CATEGORIES, TASKS, about
from audioeval.benchmarks.alice.episodes import (
    episode_from_rows,
    item_features,
    item_row,
    make_episode,
    pool_features,
    pool_row,
)
from audioeval.benchmarks.alice.items import PoolEntry, TestItem
from audioeval.benchmarks.alice.source import AliceSource, open_source
from audioeval.data.builders import EpisodeBuilder, EpisodeBuilderConfig
from audioeval.errors import ConfigError, DataError

POOL_CONFIG = "demo_pool"


@dataclass
class AliceConfig(EpisodeBuilderConfig):
    READS_BASE_FIELDS = ("data_dir",)
    task: str = "asr"
    category: str = "ceq"
    n_episodes: int | None = None  # None: every item of the task and category
    max_shots: int = 8
    seed: int = 0
    sampling_rate: int = 16000
    align_demos: bool = True
    # built-in corpus sizes
    n_per_constraint: int = 4
    n_cot: int = 24
    pool_size: int = 8
    corpus_seed: int = 0
    # a local Speech-IFEval / ALICE copy (data_dir comes from datasets.BuilderConfig)
    ceq_file: str | None = None
    cot_file: str | None = None
    test_audio_dir: str | None = None
    pool_file: str | None = None
    pool_audio_dir: str | None = None
    mmau_map_files: str | None = None
    check_audio: bool = True


class Alice(EpisodeBuilder):
    """ALICE (audio in-context learning under output-format constraints) on Speech-IFEval's tasks ASR, SER,
    GR and MMAU. One config per task x category (`asr_ceq` ... `mmau_cot`): each row is a test item with its
    audio, task question, constraint sentence, constraint id and kwargs, label, and its ordered demonstration
    list (the k-shot set is the first k; texts aligned to the item). `demo_pool` holds every demonstration
    once, with its audio and formatted answer. Built from the offline synthetic corpus unless a local
    Speech-IFEval / ALICE copy was given."""

    BUILDER_CONFIG_CLASS = AliceConfig
    ABOUT = about.ABOUT
    BUILDER_CONFIGS = [
        *(AliceConfig(name=f"{t}_{c}", task=t, category=c) for t in TASKS for c in CATEGORIES),
        AliceConfig(name=POOL_CONFIG, task="all", category="pool"),
    ]
    VERSION = datasets.Version("1.0.0")

    # --- data ------------------------------------------------------------------------------------------------
    @property
    def is_pool(self) -> bool:
        return self.config.category == "pool"

    def source(self) -> AliceSource:
        if getattr(self, "_source", None) is None:
            self._source = open_source(self.config)
        return self._source

    def items(self) -> list[TestItem]:
        items = self.source().items(self.config.task, self.config.category)
        if self.config.n_episodes is not None:
            items = items[: int(self.config.n_episodes)]
        return items

    def pool_for(self, item: TestItem) -> list[PoolEntry]:
        where = item.source.get("file")
        needed_by = f"{where}:{item.source.get('line')}" if where else item.uid
        return self.source().pool_list(item.pool_key, needed_by)

    # --- contract --------------------------------------------------------------------------------------------------
    def validate(self) -> None:
        cfg = self.config
        if not self.is_pool and (cfg.task not in TASKS or cfg.category not in CATEGORIES):
            raise ConfigError(f"alice: task must be one of {TASKS} and category one of {CATEGORIES}.")
        for name in ("max_shots", "n_per_constraint", "n_cot", "pool_size"):
            if int(getattr(cfg, name)) < 0:
                raise ConfigError(f"alice: {name} must not be negative, got {getattr(cfg, name)}.")
        if cfg.n_episodes is not None and int(cfg.n_episodes) < 1:
            raise ConfigError(
                f"alice: n_episodes must be at least 1 (or unset for all items), got {cfg.n_episodes}."
            )
        if self.is_pool:
            for key in self.source().pool_keys():
                self.source().pool_list(key)
            return
        items = self.items()
        if not items:
            raise DataError(
                f"alice {cfg.name}: the data holds no {cfg.task.upper()} {cfg.category.upper()} items."
            )
        shortest = None
        for item in items:
            size = len(self.pool_for(item))
            if shortest is None or size < shortest[0]:
                shortest = (size, item)
        if shortest is not None and shortest[0] < int(cfg.max_shots):
            size, item = shortest
            raise DataError(
                f"alice {cfg.name}: the demonstration list for {item.uid} ({' / '.join(str(k) for k in item.pool_key if k)}) "
                f"has {size} demonstration(s) but max_shots={cfg.max_shots}; lower it with --task_args max_shots={size} "
                "(and --num_fewshot), or enlarge the pool"
                + (" (built-in corpus: --task_args pool_size=N)." if self.source().name == "builtin" else ".")
            )

    def num_episodes(self) -> int:
        if self.is_pool:
            return sum(len(self.source().pool_list(k)) for k in self.source().pool_keys())
        return len(self.items())

    def max_supported_shots(self) -> int | None:
        if self.is_pool:
            return 0
        return min(int(self.config.max_shots), min(len(self.pool_for(i)) for i in self.items()))

    def episode(self, index: int) -> dict[str, Any]:
        if self.is_pool:
            raise ConfigError(
                "alice demo_pool is the demonstration pool for the Hub export, not an evaluation task; "
                "use a task x category config such as asr_ceq."
            )
        item = self.items()[index]
        return make_episode(
            item,
            index,
            self.pool_for(item),
            seed=int(self.config.seed),
            max_shots=int(self.config.max_shots),
            sampling_rate=int(self.config.sampling_rate),
            align_demos=bool(self.config.align_demos),
        )

    # --- Hub layout ------------------------------------------------------------------------------------------------
    def features_for_hub(self) -> datasets.Features:
        rate = int(self.config.sampling_rate)
        return pool_features(rate) if self.is_pool else item_features(rate)

    def to_row(self, episode: dict[str, Any]) -> dict[str, Any]:
        return item_row(episode)

    def episode_reader(self, open_config: Any) -> Any:
        """Item rows name their demonstrations by pool id; the audio is in the dataset's `demo_pool` config."""
        if self.is_pool:
            raise ConfigError(
                "alice demo_pool holds demonstrations, not episodes; read a task config such as asr_ceq."
            )
        pool = open_config(POOL_CONFIG)
        positions = {pool_id: i for i, pool_id in enumerate(pool.column("pool_id"))}

        def pool_row(pool_id: str) -> dict[str, Any]:
            if pool_id not in positions:
                raise DataError(f"the dataset's {POOL_CONFIG} config has no demonstration {pool_id!r}.")
            return pool.row(positions[pool_id])

        return lambda row: episode_from_rows(row, pool_row)

    def _generate_examples(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.validate()
        if not self.is_pool:
            for index in range(self.num_episodes()):
                yield index, self.to_row(self.episode(index))
            return
        seen: set[str] = set()
        n = 0
        for key in self.source().pool_keys():
            for entry in self.source().pool_list(key):
                if entry.pool_id in seen:
                    continue
                seen.add(entry.pool_id)
                yield n, pool_row(entry, int(self.config.sampling_rate))
                n += 1
