"""The paired statistics of `audioeval compare`, cell by cell. A cell is one number compared between the
baseline and one other run over the pairs both logged: a task's metric at one k (aggregated by the task's own
rule: a mean, a ratio such as corpus WER, a weighted mean of strata means) or a group's
pooled setting (config/pooled.py's items, results/aggregate.py's `pooled_items`).

Each cell keeps, per resampling scope (a task: its episodes, or its clusters of episodes that share data), the
sufficient sums of both runs per cluster (`Aggregation.sufficient`). One pass over the scopes then draws, for
every cell at once, the paired bootstrap (the same cluster counts for both runs) and the sign-flip
permutations (a whole cluster swaps the runs' answers), as matrix products; a cell spanning several tasks (a
pooled setting) adds up its scopes' sums, so its tasks are resampled jointly, each within itself."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from audioeval.results.compare.runs import AtK
from audioeval.results.paired_stats import (
    McNemar,
    bootstrap_counts,
    is_binary,
    mcnemar_exact,
    permutation_pvalue,
    swap_masks,
)
from audioeval.results.stats import Aggregation, percentile_ci
from audioeval.seeds import stable_seed

_CELLS_PER_CHUNK = 2_000_000  # cluster weights held at once


@dataclass
class Scope:
    """A task's clusters: its episodes (sorted) and each one's cluster (episodes that share their `cluster:`
    value share one)."""

    name: str
    episodes: np.ndarray
    clusters: np.ndarray
    size: int

    def cluster_of(self, episodes: np.ndarray) -> np.ndarray:
        return self.clusters[np.searchsorted(self.episodes, episodes)]

    def holds(self, episode: int) -> bool:
        i = int(np.searchsorted(self.episodes, episode))
        return i < len(self.episodes) and int(self.episodes[i]) == episode


def scope_of(name: str, episodes: list[int], clusters: dict[int, str]) -> Scope:
    index: dict[str, int] = {}
    ordered = sorted(set(episodes))
    # an episode without a value stands alone
    of = [index.setdefault(clusters.get(e, f"\x00episode {e}"), len(index)) for e in ordered]
    return Scope(name, np.array(ordered, dtype=np.int64), np.array(of, dtype=np.int64), len(index))


@dataclass
class _Part:
    scope: Scope
    base: np.ndarray  # (clusters, m) sufficient sums of the baseline
    other: np.ndarray  # the same of the other run


@dataclass
class Cell:
    """One number compared: observed values, the pairs behind them, and (after `resample`) the draws."""

    combine: Callable[[np.ndarray], np.ndarray] | None  # None: no pair has a value
    parts: list[_Part]
    pairs: int  # samples (items) both runs logged
    failed: int  # of which either run gave no answer
    base_value: float = math.nan
    other_value: float = math.nan
    mcnemar: McNemar | None = None
    boot_base: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    boot_other: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    swapped: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def difference(self) -> float:
        return self.other_value - self.base_value

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        return sum(p.base.sum(axis=0) for p in self.parts), sum(p.other.sum(axis=0) for p in self.parts)

    def base_draws(self) -> np.ndarray:
        assert self.combine is not None
        return self.combine(self.boot_base)

    def other_draws(self) -> np.ndarray:
        assert self.combine is not None
        return self.combine(self.boot_other)

    def permuted(self) -> tuple[np.ndarray, np.ndarray]:
        """Both runs' values under each permutation (clusters swapping answers between the runs)."""
        assert self.combine is not None
        base, other = self.totals()
        return self.combine(base + self.swapped), self.combine(other - self.swapped)

    def ci95(self) -> list[float]:
        return percentile_ci(self.other_draws() - self.base_draws()) if self.combine else [math.nan] * 2

    def p_value(self) -> float:
        if self.mcnemar is not None:
            return self.mcnemar.p_value
        if self.combine is None:
            return math.nan
        base, other = self.permuted()
        return permutation_pvalue(self.difference, other - base)


def task_cell(base: AtK, other: AtK, agg: Aggregation, scope: Scope) -> Cell:
    """A task's metric at one k over the episodes both runs logged at that k."""
    episodes, b_idx, o_idx = np.intersect1d(
        base.episodes, other.episodes, assume_unique=True, return_indices=True
    )
    inside = np.isin(episodes, scope.episodes)
    episodes, b_idx, o_idx = episodes[inside], b_idx[inside], o_idx[inside]
    failed = int(np.sum(base.failed[b_idx] | other.failed[o_idx]))
    b = {name: base.columns[name][b_idx] for name in agg.inputs}
    o = {name: other.columns[name][o_idx] for name in agg.inputs}
    clusters = scope.cluster_of(episodes)
    cell = _cell(agg, b, o, [(scope, clusters)], len(episodes), failed)
    if cell.combine is not None and agg.kind == "mean":
        mask = agg.valid_mask(b) & agg.valid_mask(o)
        x, y = b[agg.inputs[0]][mask], o[agg.inputs[0]][mask]
        if is_binary(x, y) and np.bincount(clusters[mask]).max() <= 1:
            cell.mcnemar = mcnemar_exact(x, y)
    return cell


def items_cell(
    base: tuple[list[tuple[str, int]], np.ndarray],
    other: tuple[list[tuple[str, int]], np.ndarray],
    failed_items: set[tuple[str, int]],
    scopes: dict[str, Scope],
) -> Cell:
    """A pooled setting's metric over the items (task, episode) both runs have: the mean of the item values
    (pooled_items), each task's items resampled within the task's scope."""
    b_items, b_values = base
    o_pos = {item: i for i, item in enumerate(other[0])}
    b_idx = [i for i, (t, e) in enumerate(b_items) if (t, e) in o_pos and scopes[t].holds(e)]
    keys = [b_items[i] for i in b_idx]
    o_idx = [o_pos[key] for key in keys]
    agg = Aggregation("mean", ("value",))
    by_scope = []
    for task in dict.fromkeys(t for t, _ in keys):
        chosen = np.array([t == task for t, _ in keys], dtype=bool)
        clusters = scopes[task].cluster_of(np.array([e for t, e in keys if t == task], dtype=np.int64))
        by_scope.append((scopes[task], clusters, chosen))
    b = {"value": b_values[b_idx]}
    o = {"value": other[1][o_idx]}
    cell = _cell(
        agg,
        b,
        o,
        [(s, c) for s, c, _ in by_scope],
        len(keys),
        len(failed_items & set(keys)),
        [m for *_, m in by_scope],
    )
    mask = agg.valid_mask(b) & agg.valid_mask(o)
    singles = all(np.bincount(c).max() <= 1 for _, c, _ in by_scope if len(c))
    if cell.combine is not None and singles and is_binary(b["value"][mask], o["value"][mask]):
        cell.mcnemar = mcnemar_exact(b["value"][mask], o["value"][mask])
    return cell


def _cell(
    agg: Aggregation,
    b: dict[str, np.ndarray],
    o: dict[str, np.ndarray],
    scopes: list[tuple[Scope, np.ndarray]],
    pairs: int,
    failed: int,
    members: list[np.ndarray] | None = None,
) -> Cell:
    """The cell's sufficient sums per scope over the pairs where both runs have a value."""
    mask = agg.valid_mask(b) & agg.valid_mask(o)
    if not mask.any():
        return Cell(None, [], pairs, failed)
    members = members or [np.ones(len(mask), dtype=bool)]
    parts = []
    combine = None
    for (scope, clusters), member in zip(scopes, members, strict=True):
        keep = mask[member]
        b_part = {name: col[member][keep] for name, col in b.items()}
        o_part = {name: col[member][keep] for name, col in o.items()}
        base_sums, combine = agg.sufficient(b_part, clusters[keep], scope.size)
        other_sums, _ = agg.sufficient(o_part, clusters[keep], scope.size)
        parts.append(_Part(scope, base_sums, other_sums))
    cell = Cell(combine, parts, pairs, failed)
    base_total, other_total = cell.totals()
    assert combine is not None
    cell.base_value, cell.other_value = float(combine(base_total)), float(combine(other_total))
    return cell


def resample(cells: list[Cell], n_resamples: int, seed: int) -> None:
    """Draw every cell's paired bootstrap and permutations, scope by scope (each scope's draws are seeded by
    its name, so a task is resampled the same way in every cell and every comparison it is part of)."""
    by_scope: dict[str, list[tuple[Cell, _Part]]] = {}
    for cell in cells:
        if cell.combine is None:
            continue
        m = cell.parts[0].base.shape[1]
        cell.boot_base, cell.boot_other, cell.swapped = (np.zeros((n_resamples, m)) for _ in range(3))
        for part in cell.parts:
            by_scope.setdefault(part.scope.name, []).append((cell, part))
    for name, members in by_scope.items():
        _draw_scope(name, members, n_resamples, seed)


def _draw_scope(name: str, members: list[tuple[Cell, _Part]], n_resamples: int, seed: int) -> None:
    size = members[0][1].scope.size
    base = np.hstack([part.base for _, part in members])
    other = np.hstack([part.other for _, part in members])
    widths = np.cumsum([0] + [part.base.shape[1] for _, part in members])
    boot_rng = np.random.default_rng(stable_seed(seed, "compare", name, "bootstrap"))
    swap_rng = np.random.default_rng(stable_seed(seed, "compare", name, "permutation"))
    chunk = max(1, min(n_resamples, _CELLS_PER_CHUNK // max(1, size)))
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        weights = bootstrap_counts(boot_rng, size, stop - start)
        drawn_base, drawn_other = weights @ base, weights @ other
        swapped = swap_masks(swap_rng, size, stop - start) @ (other - base)
        for i, (cell, _) in enumerate(members):
            columns = slice(widths[i], widths[i + 1])
            cell.boot_base[start:stop] += drawn_base[:, columns]
            cell.boot_other[start:stop] += drawn_other[:, columns]
            cell.swapped[start:stop] += swapped[:, columns]
