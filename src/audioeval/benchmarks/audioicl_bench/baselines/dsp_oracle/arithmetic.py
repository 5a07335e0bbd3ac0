"""AudioOperator, AudioOperatorHard: find the operator sounds, tell the spoken digits apart by template
matching, and induce both the digits and the operators from the demos' results.

1. Operator sounds. A clip is cut into islands of sound (1 ms frames within 60 dB of its peak, gaps of 10 ms or
   more). An operator sound is the same recording in every clip: an inner island of the query that has exactly
   one near-identical island (normalised cross-correlation >= 0.98) in every demo clip. One such sound per clip
   for AudioOperator, two (told apart by the sound itself) for AudioOperatorHard.
2. Digits. Between the operator sounds lie the spoken digits. Every digit of every clip is compared with every
   other by dynamic time warping of MFCCs, and the digits are clustered (average linkage); the dendrogram is
   cut at its largest jump in merge distance (as a ratio), or at the next largest when the demos cannot be
   explained with that cut.
3. Induction. Nobody tells the oracle which digit a cluster is or which operator a sound means: it searches the
   assignments of the digits 0-9 to clusters (distinct clusters, distinct digits) and of +, - and x to the
   operator sounds (x before + and -) under which every demo evaluates to its label, and every assignment that
   does votes for the value it gives the query (query digits no demo pins down take every unused digit in turn).
   The most voted value is the answer. With few demos many assignments survive, so this is where the oracle
   loses accuracy: the signal says which digits are equal, only the demos' results say which digits they are.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import (
    dtw_distances,
    islands,
    max_normalized_correlation,
    mfcc_frames,
)
from audioeval.benchmarks.audioicl_bench.configs import configs_of
from audioeval.benchmarks.audioicl_bench.operator import (
    evaluate,  # the task's arithmetic: x binds tighter than + and -
)
from audioeval.types import ShownClip, ShownEpisode

OPERATORS = ("+", "-", "*")
DIGITS = tuple(range(10))
SAME_SOUND = 0.98
SEARCH_BUDGET = 300_000  # expression evaluations per dendrogram cut


class Unsolvable(Exception):
    pass


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if abs(len(a) - len(b)) > 0.1 * max(len(a), len(b)):
        return False
    return max_normalized_correlation(a, b) >= SAME_SOUND


def find_operator_sounds(clips: list[ShownClip], count: int) -> list[list[tuple[int, int, int]]]:
    """Per clip, its operator sounds in time order as (sound id, start, stop). The query is the last clip."""
    cuts = [islands(c.samples, c.sampling_rate) for c in clips]
    reference, ref_cuts = clips[-1].samples, cuts[-1]
    candidates = []  # (reference island index, [matching island index per clip])
    for j in range(1, len(ref_cuts) - 1):
        a = reference[slice(*ref_cuts[j])]
        matches = []
        for clip, clip_cuts in zip(clips[:-1], cuts[:-1], strict=True):
            hits = [i for i in range(1, len(clip_cuts) - 1) if _same(a, clip.samples[slice(*clip_cuts[i])])]
            if len(hits) != 1:
                break
            matches.append(hits[0])
        else:
            candidates.append((j, [*matches, j]))
    for subset in itertools.combinations(candidates, count):
        per_clip = [sorted(m[c] for _, m in subset) for c in range(len(clips))]
        if all(all(b - a > 1 for a, b in zip(p, p[1:], strict=False)) for p in per_clip):
            out = []
            for c in range(len(clips)):
                found = sorted((m[c], sound) for sound, (_, m) in enumerate(subset))
                out.append([(sound, *cuts[c][i]) for i, sound in found])
            return out
    raise Unsolvable(f"did not find {count} operator sound(s) repeated in every clip")


def digit_spans(clip: ShownClip, sounds: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The stretches of sound before, between and after the operator sounds."""
    bounds = [0, *[v for _, start, stop in sounds for v in (start, stop)], len(clip.samples)]
    spans = []
    for start, stop in zip(bounds[::2], bounds[1::2], strict=True):
        inner = [(a + start, b + start) for a, b in islands(clip.samples[start:stop], clip.sampling_rate)]
        if not inner:
            raise Unsolvable("a digit position holds no sound")
        spans.append((inner[0][0], inner[-1][1]))
    return spans


Item = tuple[tuple[int, ...], tuple[int, ...]]  # (digit cluster per position, operator sound per slot)


class _Assignments:
    """Every digit assignment the search has kept so far, one row each in depth-first order: column c holds
    the digit of cluster c (-1 while unassigned). All rows assign the same clusters, so they extend alike."""

    def __init__(self, n_clusters: int) -> None:
        self.rows = np.full((1, n_clusters), -1, dtype=np.int64)
        self.assigned: list[int] = []

    def extensions(self, clusters: tuple[int, ...]) -> tuple[list[int], np.ndarray]:
        """The clusters of `clusters` not yet assigned (first appearance first) and the permutations of the
        unused digits over them, in the order itertools.permutations gives them."""
        free = [c for c in dict.fromkeys(clusters) if c not in self.assigned]
        unused = len(DIGITS) - len(self.assigned)
        perms = np.array(list(itertools.permutations(range(unused), len(free))), dtype=np.int64)
        return free, perms.reshape(len(perms), len(free))

    def extend(self, free: list[int], perms: np.ndarray) -> np.ndarray:
        """Each row followed by its extensions (row-major: the depth-first order of the scalar search)."""
        used = np.zeros((len(self.rows), len(DIGITS)), dtype=bool)
        if self.assigned:
            np.put_along_axis(used, self.rows[:, self.assigned], True, axis=1)
        unused = np.argsort(used, axis=1, kind="stable")  # each row's unused digits first, ascending
        parent = np.repeat(np.arange(len(self.rows)), len(perms))
        out = self.rows[parent]
        for j, cluster in enumerate(free):
            out[:, cluster] = unused[parent, np.tile(perms[:, j], len(self.rows))]
        return out


def _values(rows: np.ndarray, item: Item, meaning: tuple[str, ...]) -> np.ndarray:
    clusters, sounds = item
    # the task's own evaluate() on whole columns (copies: it multiplies its first operand in place)
    operands: list[Any] = [rows[:, c].copy() for c in clusters]
    result: Any = evaluate(operands, [meaning[s] for s in sounds])
    return np.asarray(result)


def _meaning_votes(
    demos: list[tuple[Item, int]], query: Item, meaning: tuple[str, ...], spent: list[int]
) -> list[tuple[int, int]]:
    """(value, votes) for the query under one meaning of the operator sounds, values in the order the
    depth-first search first meets them. `spent` counts expression evaluations against SEARCH_BUDGET, as
    many as the depth-first search makes, so the budget runs out on exactly the same episodes."""
    n_clusters = 1 + max(c for item in [*(d for d, _ in demos), query] for c in item[0])
    search = _Assignments(n_clusters)
    for item, label in [*demos, (query, None)]:
        free, perms = search.extensions(item[0])
        spent[0] += len(search.rows) * len(perms)
        if spent[0] > SEARCH_BUDGET:
            raise Unsolvable("too many assignments explain the demos")
        rows = search.extend(free, perms)
        values = _values(rows, item, meaning)
        if label is None:  # the query: every assignment that explains the demos votes
            found, first, counts = np.unique(values, return_index=True, return_counts=True)
            order = np.argsort(first, kind="stable")
            return [(int(found[i]), int(counts[i])) for i in order]
        search.rows = rows[values == label]
        search.assigned = [*search.assigned, *free]
        if not len(search.rows):
            return []
    return []


def solve(demos: list[tuple[Item, int]], query: Item, sounds: int) -> Counter:
    """Votes for the query's value over every digit/operator assignment that explains all demos, inserted in
    the order a depth-first search meets them (Counter.most_common breaks ties by that order)."""
    votes: Counter = Counter()
    spent = [0]
    for meaning in itertools.product(OPERATORS, repeat=sounds):
        for value, count in _meaning_votes(demos, query, meaning, spent):
            votes[value] += count
    return votes


class ArithmeticMethod(Method):
    tasks = configs_of("operator")
    name = "digit template matching and operator induction"
    needs_demos = True

    def _distances(self, digits: list[tuple[ShownClip, tuple[int, int]]]) -> np.ndarray:
        """The DTW distance matrix of the digits; pairs met before (the requests for k = 1, 3, 5 of an episode
        share their demos) come from the cache, the others are computed together."""
        n = len(digits)
        distances = np.zeros((n, n))
        keys = {
            (i, j): ("dtw", digits[i][0].sha256, digits[i][1], digits[j][0].sha256, digits[j][1])
            for i, j in itertools.combinations(range(n), 2)
        }
        known: dict[tuple[int, int], float | None] = {p: self.cache.lookup(k) for p, k in keys.items()}
        missing = [pair for pair, value in known.items() if value is None]
        computed = dtw_distances([(self._mfcc(*digits[i]), self._mfcc(*digits[j])) for i, j in missing])
        for pair, distance in zip(missing, computed, strict=True):
            self.cache.put(keys[pair], distance)
            known[pair] = distance
        for (i, j), value in known.items():
            distances[i, j] = distances[j, i] = value or 0.0  # every pair is known by now
        return distances

    def _mfcc(self, clip: ShownClip, span: tuple[int, int]) -> np.ndarray:
        return self.cache.get(
            ("mfcc", clip.sha256, span),
            lambda: mfcc_frames(clip.samples[span[0] : span[1]], clip.sampling_rate),
        )

    def predict(self, view: ShownEpisode) -> Prediction:
        try:
            labels = [int(d.label or "") for d in view.demos]
        except ValueError:
            return Prediction(None, reason="the demo labels are not whole numbers")
        clips = [d.clips[-1] for d in view.demos] + [view.query.clips[-1]]
        n_sounds = 1 if view.builder_config == "audio_operator" else 2
        try:
            sounds = find_operator_sounds(clips, n_sounds)
            spans = [digit_spans(c, s) for c, s in zip(clips, sounds, strict=True)]
        except Unsolvable as err:
            return Prediction(None, reason=str(err))
        digits = [(c, span) for c, clip_spans in zip(clips, spans, strict=True) for span in clip_spans]
        owner = [i for i, clip_spans in enumerate(spans) for _ in clip_spans]
        n = len(digits)
        distances = self._distances(digits)
        tree = linkage(squareform(distances, checks=False), "average")
        heights = tree[:, 2]
        # cut between consecutive merge heights, the largest jump (as a ratio: distances have no natural
        # unit) first; below the first merge (every digit different) and above the last (all one digit) last
        jumps = sorted(range(1, len(heights)), key=lambda i: -heights[i] / max(heights[i - 1], 1e-9))
        thresholds = [(heights[i] + heights[i - 1]) / 2 for i in jumps]
        if len(heights):
            thresholds += [heights[0] / 2, heights[-1] + 1.0]
        operator_ids = [tuple(s for s, _, _ in clip_sounds) for clip_sounds in sounds]
        reasons = []
        for threshold in thresholds:
            cluster = fcluster(tree, threshold, "distance") if n > 1 else np.ones(1, dtype=int)
            items = [tuple(int(cluster[i]) for i in range(n) if owner[i] == c) for c in range(len(clips))]
            demos = [((items[c], operator_ids[c]), labels[c]) for c in range(len(labels))]
            try:
                votes = solve(demos, (items[-1], operator_ids[-1]), n_sounds)
            except Unsolvable as err:
                reasons.append(str(err))
                continue
            if votes:
                value, weight = votes.most_common(1)[0]
                return Prediction(
                    str(value),
                    {
                        "digit_clusters": int(len(set(cluster))),
                        "cut_distance": round(float(threshold), 3),
                        "answer_share": round(weight / sum(votes.values()), 3),
                    },
                )
            reasons.append("no assignment explains every demo")
        return Prediction(None, reason="; ".join(dict.fromkeys(reasons)))
