"""The contract between `dsp-oracle` and its per-task-family methods, and the cache they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from audioeval.types import ShownEpisode

T = TypeVar("T")


@dataclass
class Prediction:
    """An answer read from the signal, or None when the analysis could not reach one (the model then falls
    back to a draw from the label space and says why in the response info)."""

    answer: str | None
    info: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # why there is no answer


class AnalysisCache:
    """Least-recently-used store for per-clip analyses (features, distances), keyed by audio hashes: the
    requests for k = 0, 1, 3, 5 of one episode share most of their clips."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def lookup(self, key: Hashable) -> Any | None:
        """The stored value (now the most recently used), or None."""
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: Hashable, value: Any) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = compute()
        self._items[key] = value
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value


class Method(ABC):
    """Reads one task family's answer from the audio. Every free constant is set from the episode shown in
    the prompt (demos, bank, labelled anchors), never from generator settings or episode metadata."""

    #: builder configs this method answers
    tasks: ClassVar[tuple[str, ...]] = ()
    #: a short name for the response info and the docs
    name: ClassVar[str] = ""
    #: True when nothing can be calibrated without demonstrations (k=0 then falls back to the label space)
    needs_demos: ClassVar[bool] = True

    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    @abstractmethod
    def predict(self, view: ShownEpisode) -> Prediction:
        """The answer for the query of `view` (k >= 1 when `needs_demos`)."""
