"""AnomalyDetect: every clip of an episode comes from one machine; each demo pairs a Normal and an
Anomalous recording, and the query is one recording labelled Normal or Anomalous (equally likely).

Procedural machines: one unit per episode, each recording at a slightly different operating point, the
anomalous ones carrying one fault type applicable to the machine at `anomaly_strength_db`. DCASE folders:
one machine type per episode; Normal from train/test normal files, Anomalous from test anomaly files.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audioeval.audio.dsp import cap_peak
from audioeval.benchmarks.audioicl_bench.common import (
    QUERY_SLOT,
    Settings,
    clip,
    episode,
    episode_rng,
    outline_clip,
    slot_rng,
)
from audioeval.benchmarks.audioicl_bench.sounds import machines
from audioeval.benchmarks.audioicl_bench.sounds.corpora import load_audio

LABELS = ("Normal", "Anomalous")


def max_shots(settings: Settings) -> tuple[int | None, str]:
    corpus = settings.machines.corpus
    if corpus is None:
        return None, "procedural machines can record any number of clips"
    limit, machine = corpus.max_shots()
    return limit, (
        f"each demo needs its own normal and anomalous recording besides the query, and machine {machine!r} has "
        f"{len(corpus.normal[machine])} normal and {len(corpus.anomalous[machine])} anomalous files"
    )


def _synth_clip(
    settings: Settings, unit: machines.MachineUnit, anomalous: bool, rng: np.random.Generator
) -> tuple[np.ndarray, dict[str, Any]]:
    seconds, sr = settings.anomaly_seconds, settings.sampling_rate
    if not anomalous:
        samples, info = machines.render_normal(unit, seconds, sr, rng)
        return samples, {**info, "anomaly": None}
    kinds = machines.APPLICABLE_ANOMALIES[unit.machine]
    kind = kinds[int(rng.integers(len(kinds)))]
    return machines.render_anomalous(unit, kind, settings.anomaly_strength_db, seconds, sr, rng)


def _plan_synth(settings: Settings, index: int) -> tuple[str, machines.MachineUnit, str]:
    """The procedural episode's draws before any rendering: the machine, its unit and the query's label."""
    rng = episode_rng(settings, index)
    machine = machines.MACHINE_TYPES[int(rng.integers(len(machines.MACHINE_TYPES)))]
    unit = machines.draw_unit(machine, rng)
    return machine, unit, LABELS[int(rng.integers(2))]


def outline(settings: Settings, index: int) -> dict[str, Any] | None:
    """The episode's labels and clip identities without rendering (`EpisodeBuilder.episode_outline`), for the
    procedural machines: every recording is drawn from its own slot's generator (a demo's Normal then its
    Anomalous from one), so none is a twin. None with DCASE files, whose files may repeat bytes."""
    if settings.machines.corpus is not None:
        return None
    machine, unit, query_label = _plan_synth(settings, index)

    def recording(label: str, role: str, slot: int, position: int) -> tuple[dict[str, Any], dict[str, Any]]:
        labelled = outline_clip(settings, index, slot, role, label if role != "query" else None, position)
        return labelled, {"label": label}

    query = recording(query_label, "query", QUERY_SLOT, 0)
    pairs = [
        (recording("Normal", "Normal", i + 1, 0), recording("Anomalous", "Anomalous", i + 1, 1))
        for i in range(settings.max_shots)
    ]
    return _assemble(settings, index, machine, query_label, query, pairs, {"unit": unit.describe()})


def _generate_synth(settings: Settings, index: int) -> dict[str, Any]:
    sr = settings.sampling_rate
    machine, unit, query_label = _plan_synth(settings, index)

    def recording(label: str, role: str, srng: np.random.Generator) -> tuple[dict[str, Any], dict[str, Any]]:
        samples, info = _synth_clip(settings, unit, label == "Anomalous", srng)
        labelled = clip(role, label if role != "query" else None, cap_peak(samples, 0.999), sr)
        return labelled, {"label": label, **info}

    query = recording(query_label, "query", slot_rng(settings, index, QUERY_SLOT))
    pairs = []
    for i in range(settings.max_shots):
        srng = slot_rng(settings, index, i + 1)
        pairs.append((recording("Normal", "Normal", srng), recording("Anomalous", "Anomalous", srng)))
    extra = {
        "unit": unit.describe(),
        "anomaly_strength_db": settings.anomaly_strength_db,
        "seconds": settings.anomaly_seconds,
    }
    return _assemble(settings, index, machine, query_label, query, pairs, extra)


def _generate_corpus(settings: Settings, index: int) -> dict[str, Any]:
    corpus = settings.machines.corpus
    assert corpus is not None
    sr = settings.sampling_rate
    rng = episode_rng(settings, index)
    machine = corpus.machines[int(rng.integers(len(corpus.machines)))]
    query_label = LABELS[int(rng.integers(2))]
    normal = [corpus.normal[machine][int(i)] for i in rng.permutation(len(corpus.normal[machine]))]
    anomalous = [corpus.anomalous[machine][int(i)] for i in rng.permutation(len(corpus.anomalous[machine]))]

    def recording(path: Any, label: str, role: str) -> tuple[dict[str, Any], dict[str, Any]]:
        samples = cap_peak(load_audio(path, sr), 0.999)
        return clip(role, label if role != "query" else None, samples, sr), {
            "label": label,
            **corpus.describe(path),
        }

    # Position 0 of each list is reserved for the query, so the demos are the same whatever the query is.
    query = recording((normal if query_label == "Normal" else anomalous)[0], query_label, "query")
    pairs = [
        (recording(normal[i + 1], "Normal", "Normal"), recording(anomalous[i + 1], "Anomalous", "Anomalous"))
        for i in range(settings.max_shots)
    ]
    return _assemble(settings, index, machine, query_label, query, pairs, {})


Recording = tuple[dict[str, Any], dict[str, Any]]  # (clip, facts about it)


def _assemble(
    settings: Settings,
    index: int,
    machine: str,
    query_label: str,
    query: Recording,
    pairs: list[tuple[Recording, Recording]],
    extra_metadata: dict[str, Any],
) -> dict[str, Any]:
    """The episode: each demo holds a Normal and an Anomalous recording of the machine; the query one recording."""
    demos = [
        {"clips": [n_clip, a_clip], "label": "Normal Anomalous", "recordings": [n_info, a_info]}
        for (n_clip, n_info), (a_clip, a_info) in pairs
    ]
    metadata = {
        "rule": "label = whether the recording deviates from the machine's normal sound",
        "machine": machine,
        **extra_metadata,
    }
    return episode(
        settings,
        index,
        demos,
        {"clips": [query[0]], "label": query_label, "recordings": [query[1]]},
        metadata,
    )


def generate(settings: Settings, index: int) -> dict[str, Any]:
    if settings.machines.corpus is None:
        return _generate_synth(settings, index)
    return _generate_corpus(settings, index)
