"""One interface over the two data sources: the built-in corpus, or a local Speech-IFEval / ALICE copy."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from audioeval.benchmarks.alice.corpus import BuiltinCorpus, builtin_corpus
from audioeval.benchmarks.alice.items import PoolEntry, PoolKey, TestItem, stratified_order
from audioeval.benchmarks.alice.layout import LayoutPaths, SpeechIFEvalData, resolve_paths

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
        """The task's items, stratified over constraints (CEQ) or MMAU sub-categories (CoT): the files list
        each constraint's items together, so their first N rows would all be one constraint."""
        items = [i for i in self.data.items(category) if i.task == task]
        if category == "ceq":
            return stratified_order(items, lambda i: i.instruction_id)
        return stratified_order(items, lambda i: i.sub_category)

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


_LOCAL: dict[tuple[Any, ...], SpeechIFEvalData] = {}


def _stat(path: Path) -> tuple[str, int, int]:
    try:
        st = path.stat()
        return (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        return (str(path), -1, -1)


def _local_data(paths: LayoutPaths, check_audio: bool) -> SpeechIFEvalData:
    """One parsed copy per set of files and their versions (tasks of one run share it; edited files are
    read again)."""
    files = [paths.ceq_file, paths.cot_file, paths.pool_file, *paths.mmau_maps]
    key = (repr(paths), tuple(_stat(f) for f in files), check_audio)
    if key not in _LOCAL:
        if len(_LOCAL) >= 8:
            _LOCAL.pop(next(iter(_LOCAL)))
        _LOCAL[key] = SpeechIFEvalData(paths, check_audio=check_audio)
    return _LOCAL[key]


def open_source(config: Any) -> AliceSource:
    """The built-in corpus unless the config names a data folder or file."""
    options = tuple((name, getattr(config, name, None)) for name in PATH_OPTIONS)
    data_dir = getattr(config, "data_dir", None)
    if not data_dir and not any(value for _, value in options):
        return BuiltinSource(
            builtin_corpus(config.n_per_constraint, config.n_cot, config.pool_size, config.corpus_seed)
        )
    paths = resolve_paths(str(data_dir) if data_dir else None, dict(options))
    return LocalSource(_local_data(paths, bool(config.check_audio)))
