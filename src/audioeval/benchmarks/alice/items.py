"""The schema both data sources (the built-in corpus and a local Speech-IFEval / ALICE copy) produce."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

# (task, category, instruction id, MMAU category or None, MMAU sub-category or None)
PoolKey = tuple[str, str, str, str | None, str | None]


@dataclass(frozen=True)
class AudioRef:
    """Where a clip comes from and how to get its samples (float32 at `sampling_rate`)."""

    describe: str  # a file path, or a description of the synthesis recipe
    load: Callable[[int], np.ndarray] = field(compare=False, repr=False)


@dataclass
class TestItem:
    uid: str
    task: str  # asr | ser | gr | mmau
    category: str  # ceq | cot
    instruction_id: str  # a CEQ constraint id, or "chain-of-thought"
    kwargs: dict[str, Any]
    task_text: str  # the task question (stage 2 keeps only this)
    constraint_text: str  # the constraint sentence(s) (stage 1 only)
    label: str
    choices: list[str]  # candidate answers (the label space the `chance` baseline draws from)
    audio: AudioRef
    rank: int  # position among items with the same task and instruction id, in source order
    mmau_category: str | None = None
    sub_category: str | None = None
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def instruction(self) -> str:
        return f"{self.task_text}\n{self.constraint_text}" if self.constraint_text else self.task_text

    @property
    def pool_key(self) -> PoolKey:
        return (self.task, self.category, self.instruction_id, self.mmau_category, self.sub_category)


@dataclass
class PoolEntry:
    pool_id: str
    key: PoolKey
    task_text: str
    constraint_text: str
    answer: str  # the assistant turn as the pool gives it (formatted)
    answer_plain: str | None  # the unformatted answer, when known
    audio: AudioRef
    source: dict[str, Any] = field(default_factory=dict)


def stratified_order(items: list[TestItem], stratum: Callable[[TestItem], Hashable]) -> list[TestItem]:
    """The items reordered so that every prefix (`--limit N`) is a stratified sample: first one item of each
    stratum (in order of first appearance), then each stratum's items spread in proportion to its size (its
    r-th of n items sorts at r/n). Each stratum keeps its source order; equal-sized strata come out
    round-robin, like the built-in corpus."""
    strata = [stratum(item) for item in items]
    sizes = Counter(strata)
    first_seen = {s: k for k, s in enumerate(dict.fromkeys(strata))}
    seen: Counter[Hashable] = Counter()
    keys = []
    for index, s in enumerate(strata):
        keys.append((Fraction(seen[s], sizes[s]), first_seen[s], index))
        seen[s] += 1
    return [items[index] for *_, index in sorted(keys)]
