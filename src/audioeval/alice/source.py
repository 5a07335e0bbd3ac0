"""One interface over the two data sources: the built-in corpus, or a local Speech-IFEval / ALICE copy."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol

from audioeval.alice.corpus import BuiltinCorpus, builtin_corpus
from audioeval.alice.items import PoolEntry, PoolKey, TestItem
from audioeval.alice.layout import SpeechIFEvalData, resolve_paths

PATH_OPTIONS = ("ceq_file", "cot_file", "test_audio_dir", "pool_file", "pool_audio_dir", "mmau_map_files")


class AliceSource(Protocol):
    name: str

    def items(self, task: str, category: str) -> list[TestItem]: ...

    def pool_list(self, key: PoolKey, needed_by: str = "") -> list[PoolEntry]: ...

    def pool_keys(self) -> list[PoolKey]: ...


class BuiltinSource:
    name = "builtin"

    def __init__(self, corpus: BuiltinCorpus) -> None:
        self.corpus = corpus

    def items(self, task: str, category: str) -> list[TestItem]:
        return _builtin_items(self.corpus, task, category)

    def pool_list(self, key: PoolKey, needed_by: str = "") -> list[PoolEntry]:
        return self.corpus.pool()[key]

    def pool_keys(self) -> list[PoolKey]:
        return list(self.corpus.pool())


@lru_cache(maxsize=64)
def _builtin_items(corpus: BuiltinCorpus, task: str, category: str) -> list[TestItem]:
    return corpus.items(task, category)


class LocalSource:
    name = "speech-ifeval"

    def __init__(self, data: SpeechIFEvalData) -> None:
        self.data = data

    def items(self, task: str, category: str) -> list[TestItem]:
        return [i for i in self.data.items(category) if i.task == task]

    def pool_list(self, key: PoolKey, needed_by: str = "") -> list[PoolEntry]:
        return self.data.pool_list(key, needed_by)

    def pool_keys(self) -> list[PoolKey]:
        """The lists the evaluation files need (the pool may hold more, e.g. creative writing)."""
        keys: list[PoolKey] = []
        for category, path in (("ceq", self.data.paths.ceq_file), ("cot", self.data.paths.cot_file)):
            if not path.is_file():
                continue
            for item in self.data.items(category):
                if item.pool_key not in keys:
                    keys.append(item.pool_key)
        return keys


@lru_cache(maxsize=8)
def _local_data(
    data_dir: str | None, options: tuple[tuple[str, Any], ...], check_audio: bool
) -> SpeechIFEvalData:
    return SpeechIFEvalData(resolve_paths(data_dir, dict(options)), check_audio=check_audio)


def open_source(config: Any) -> AliceSource:
    """The built-in corpus unless the config names a data folder or file."""
    options = tuple((name, getattr(config, name, None)) for name in PATH_OPTIONS)
    data_dir = getattr(config, "data_dir", None)
    if not data_dir and not any(value for _, value in options):
        return BuiltinSource(
            builtin_corpus(config.n_per_constraint, config.n_cot, config.pool_size, config.corpus_seed)
        )
    return LocalSource(_local_data(str(data_dir) if data_dir else None, options, bool(config.check_audio)))
