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

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.method import Method, Prediction
from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.signal import (
    dtw_distance,
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


class _Search:
    """Depth-first search over digit assignments for one meaning of the operator sounds."""

    def __init__(
        self, demos: list[tuple[Item, int]], query: Item, meaning: tuple[str, ...], budget: list[int]
    ):
        self.demos, self.query, self.meaning, self.budget = demos, query, meaning, budget
        self.votes: Counter = Counter()

    def value(self, assign: dict[int, int], item: Item) -> int:
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise Unsolvable("too many assignments explain the demos")
        clusters, sounds = item
        return evaluate([assign[c] for c in clusters], [self.meaning[s] for s in sounds])

    @staticmethod
    def extend(assign: dict[int, int], clusters: tuple[int, ...]):
        free = [c for c in dict.fromkeys(clusters) if c not in assign]
        unused = [d for d in DIGITS if d not in assign.values()]
        for values in itertools.permutations(unused, len(free)):
            yield {**assign, **dict(zip(free, values, strict=True))}

    def run(self, i: int = 0, assign: dict[int, int] | None = None) -> Counter:
        assign = assign or {}
        if i == len(self.demos):
            for full in self.extend(assign, self.query[0]):
                self.votes[self.value(full, self.query)] += 1
            return self.votes
        item, label = self.demos[i]
        for full in self.extend(assign, item[0]):
            if self.value(full, item) == label:
                self.run(i + 1, full)
        return self.votes


def solve(demos: list[tuple[Item, int]], query: Item, sounds: int) -> Counter:
    """Votes for the query's value over every digit/operator assignment that explains all demos."""
    votes: Counter = Counter()
    budget = [SEARCH_BUDGET]
    for meaning in itertools.product(OPERATORS, repeat=sounds):
        votes.update(_Search(demos, query, meaning, budget).run())
    return votes


class ArithmeticMethod(Method):
    tasks = configs_of("operator")
    name = "digit template matching and operator induction"
    needs_demos = True

    def _distance(self, a: tuple[ShownClip, tuple[int, int]], b: tuple[ShownClip, tuple[int, int]]) -> float:
        key = ("dtw", a[0].sha256, a[1], b[0].sha256, b[1])

        def compute() -> float:
            fa = self._mfcc(*a)
            fb = self._mfcc(*b)
            return dtw_distance(fa, fb)

        return self.cache.get(key, compute)

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
        distances = np.zeros((n, n))
        for i, j in itertools.combinations(range(n), 2):
            distances[i, j] = distances[j, i] = self._distance(digits[i], digits[j])
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
