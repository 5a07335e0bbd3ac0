"""ADU-Bench: open-ended audio dialogue understanding, in four datasets (configs) — general (3 scenarios),
skill (12 skills), multilingual (languages) and ambiguity (intonation, pause, homophone, repetition).

Each episode is one spoken query (zero-shot, no demos) with a textual reference answer; LLM judges score
the model's response against the reference. Without `data_dir` the queries come from the built-in corpus
(written for audioeval, in corpus/<config>.jsonl), spoken offline with eSpeak NG across the paper's
variation grid (2 genders, 4 speakers, rate, pitch and volume at standard and +-10%); each row records the
variation it received. With `data_dir` the released ADU-Bench folder is read instead (input/<dataset>/
<subset>.jsonl and its audio). `queries_file` adds queries of your own in the corpus format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from audioeval.benchmarks.adu_bench import about
from audioeval.benchmarks.adu_bench.domains import DATASETS
from audioeval.benchmarks.adu_bench.episodes import (
    describe_item,
    episode_to_row,
    hub_features,
    make_episode,
    row_to_episode,
)
from audioeval.benchmarks.adu_bench.queries import QueryItem, check_unique, read_query_file
from audioeval.benchmarks.adu_bench.render import MODES, Variation, choose_variation, render
from audioeval.benchmarks.adu_bench.upstream import load_clip, read_dataset
from audioeval.data.builders import EpisodeBuilder, EpisodeBuilderConfig
from audioeval.errors import ConfigError, DataError
from audioeval.types import AudioClip

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


@dataclass
class ADUBenchConfig(EpisodeBuilderConfig):
    READS_BASE_FIELDS = ("data_dir",)
    n_episodes: int | None = None  # None: every query x variations_per_query
    max_shots: int = 0
    queries_file: str | None = None  # more queries in the corpus JSONL format
    builtin: bool = True  # include the built-in corpus (ignored when data_dir is given)
    variation: str = "random"  # random: a random grid point per rendering; standard: no perturbation
    variations_per_query: int = 1  # renderings of each synthesised query


def interleave_domains(items: list[QueryItem]) -> list[QueryItem]:
    """Round-robin over domains (in order of first appearance), so any prefix (--limit N) spans domains."""
    by_domain: dict[str, list[QueryItem]] = {}
    for item in items:
        by_domain.setdefault(item.domain, []).append(item)
    queues = list(by_domain.values())
    out: list[QueryItem] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


class ADUBench(EpisodeBuilder):
    BUILDER_CONFIG_CLASS = ADUBenchConfig
    ABOUT = about.ABOUT
    BUILDER_CONFIGS = [ADUBenchConfig(name=name, description=title) for name, title in DATASETS.items()]
    VERSION = datasets.Version("1.0.0")

    # --- items -----------------------------------------------------------------------------------------------
    def items(self) -> list[QueryItem]:
        cached = getattr(self, "_adu_items", None)
        if cached is None:
            cached = self._adu_items = interleave_domains(self._load_items())
        return cached

    def _load_items(self) -> list[QueryItem]:
        name = self.config.name
        items: list[QueryItem] = []
        if self.config.data_dir:
            items += read_dataset(Path(self.config.data_dir), name)
        elif self.config.builtin:
            path = CORPUS_DIR / f"{name}.jsonl"
            for item in read_query_file(path):
                if item.dataset != name:
                    raise DataError(
                        f"{item.origin}: the {name} corpus holds an item of dataset {item.dataset!r}."
                    )
                items.append(item)
        if self.config.queries_file:
            items += [
                i for i in read_query_file(Path(self.config.queries_file).expanduser()) if i.dataset == name
            ]
        check_unique(items)
        if not items:
            raise DataError(
                f"adu_bench/{name}: no queries: the built-in corpus is off (builtin=false) and "
                + (
                    f"{self.config.queries_file} holds no items of dataset {name!r}."
                    if self.config.queries_file
                    else "no queries_file was given."
                )
            )
        return items

    def _repetitions(self, item: QueryItem) -> int:
        return 1 if item.audio_path is not None else int(self.config.variations_per_query)

    def _plan(self) -> list[tuple[QueryItem, int]]:
        """(item, repetition) per episode index: every item once, then second renderings, ..."""
        plan = getattr(self, "_adu_plan", None)
        if plan is None:
            items = self.items()
            rounds = max(self._repetitions(i) for i in items)
            plan = [(i, r) for r in range(rounds) for i in items if r < self._repetitions(i)]
            self._adu_plan = plan
        return plan

    # --- the episode contract ----------------------------------------------------------------------------------
    def validate(self) -> None:
        cfg = self.config
        if cfg.variation not in MODES:
            raise ConfigError(
                f"adu_bench: variation must be one of {', '.join(MODES)}, got {cfg.variation!r}."
            )
        if int(cfg.variations_per_query) < 1:
            raise ConfigError(
                f"adu_bench: variations_per_query must be at least 1, got {cfg.variations_per_query}."
            )
        if cfg.n_episodes is not None and int(cfg.n_episodes) < 1:
            raise ConfigError(
                f"adu_bench: n_episodes must be at least 1 (or unset for all), got {cfg.n_episodes}."
            )
        if int(cfg.max_shots) != 0:
            raise ConfigError("adu_bench: episodes are zero-shot; max_shots must be 0.")
        if cfg.data_dir and not Path(cfg.data_dir).expanduser().is_dir():
            raise DataError(f"adu_bench: data_dir {cfg.data_dir} is not a folder; pass the ADU-Bench folder.")
        self._plan()

    def max_supported_shots(self) -> int:
        return 0

    def num_episodes(self) -> int:
        total = len(self._plan())
        return total if self.config.n_episodes is None else min(total, int(self.config.n_episodes))

    def _variation(self, item: QueryItem, repetition: int) -> dict[str, Any]:
        if item.audio_path is not None:
            return {**item.recorded_variation, "voice": None, "contour": None, "pause": None}
        return self._grid_point(item, repetition).as_dict()

    def _grid_point(self, item: QueryItem, repetition: int) -> Variation:
        return choose_variation(item, repetition, int(self.config.seed), self.config.variation)

    def _episode_id(self, item: QueryItem, repetition: int) -> str:
        return f"{self.config.name}/{item.item_id}" + (f"#{repetition}" if repetition else "")

    def describe(self, index: int) -> dict[str, Any]:
        """Episode metadata without rendering audio (what reports group by)."""
        item, repetition = self._plan()[index]
        return {
            "id": self._episode_id(item, repetition),
            **describe_item(item, self._variation(item, repetition)),
        }

    def episode(self, index: int) -> dict[str, Any]:
        item, repetition = self._plan()[index]
        rate = int(self.config.sampling_rate)
        if item.audio_path is not None:
            samples = load_clip(item.audio_path, rate, item.origin)
            variation = self._variation(item, repetition)
        else:
            point = self._grid_point(item, repetition)
            samples, variation = render(item, point, rate), point.as_dict()
        clip = AudioClip.from_array(samples, rate)
        return make_episode(index, self._episode_id(item, repetition), item, clip, variation)

    # --- the Hub layout ------------------------------------------------------------------------------------
    def features_for_hub(self) -> datasets.Features:
        return hub_features(int(self.config.sampling_rate))

    def to_row(self, episode: dict[str, Any]) -> dict[str, Any]:
        return episode_to_row(episode)

    def episode_reader(self, open_config: Any) -> Any:
        return row_to_episode
