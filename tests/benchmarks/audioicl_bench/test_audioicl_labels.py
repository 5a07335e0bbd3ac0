"""Label validity: every AudioICL-Bench label follows from the audio (or, for the arithmetic tasks, from the
metadata) by analysis written here, independently of the generators. 50 episodes per task, query and
every demo checked; 100% agreement for the deterministic tasks."""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import pytest
from scipy.signal import fftconvolve, stft

from audioeval.benchmarks.audioicl_bench.sounds import percussion
from audioeval.data.builders import make_builder

N_EPISODES = 50
SR = 16000


@cache
def episodes(config: str, **kwargs: object) -> list[dict]:
    builder = make_builder("audioicl_bench", config, {"n_episodes": N_EPISODES, **kwargs})
    return [builder.episode(i) for i in range(N_EPISODES)]


def shots(episode: dict) -> list[dict]:
    return [episode["query"], *episode["demos"]]


def samples(shot: dict, clip: int = 0) -> np.ndarray:
    return shot["clips"][clip]["audio"].samples.astype(np.float64)


# ---- independent signal analysis ------------------------------------------------------------------------


def frame_db(x: np.ndarray, hop: int = 80) -> np.ndarray:
    """Energy of consecutive 5 ms frames in dB relative to the loudest frame."""
    n = len(x) // hop
    energy = (x[: n * hop].reshape(n, hop) ** 2).mean(axis=1) + 1e-20
    return 10 * np.log10(energy / energy.max())


def count_onsets(
    x: np.ndarray, attack_db: float = -20.0, quiet_db: float = -50.0, quiet_frames: int = 6
) -> int:
    """Count attacks: a frame rising above `attack_db` after at least 30 ms below `quiet_db`."""
    count, armed, quiet = 0, True, 0
    for level in frame_db(x):
        if armed and level > attack_db:
            count, armed, quiet = count + 1, False, 0
        elif not armed:
            quiet = quiet + 1 if level < quiet_db else 0
            armed = quiet >= quiet_frames
    return count


def match_score(x: np.ndarray, template: np.ndarray) -> np.ndarray:
    """1 - |x[j:j+L] - template|^2 / |template|^2 at every offset j: 1 for an exact copy, lower for a copy
    under noise, near or below 0 elsewhere (unlike a normalised correlation it also checks the level)."""
    cross = fftconvolve(x, template[::-1], mode="valid")
    energy = np.concatenate([[0.0], np.cumsum(x * x)])
    window = energy[len(template) :] - energy[: -len(template)]
    return (2 * cross - window) / np.sum(template * template)


def matched_peaks(x: np.ndarray, template: np.ndarray, threshold: float = 0.5) -> list[int]:
    """Offsets where the template matches, strongest first, no two closer than the template length."""
    score = match_score(x, template)
    taken = np.zeros(len(score), dtype=bool)
    peaks = []
    for j in np.argsort(-score):
        if score[j] < threshold:
            break
        if not taken[j]:
            peaks.append(int(j))
            taken[max(0, j - len(template) + 1) : j + len(template)] = True
    return sorted(peaks)


def zero_runs(x: np.ndarray, min_samples: int) -> list[tuple[int, int]]:
    """(start, stop) of runs of exact zeros at least `min_samples` long."""
    padded = np.concatenate([[0], (x == 0).astype(np.int8), [0]])
    edges = np.diff(padded)
    return [
        (a, b)
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1), strict=True)
        if b - a >= min_samples
    ]


MORSE = {
    ".-": "A", "-...": "B", "-.-.": "C", "-..": "D", ".": "E", "..-.": "F", "--.": "G", "....": "H", "..": "I",
    ".---": "J", "-.-": "K", ".-..": "L", "--": "M", "-.": "N", "---": "O", ".--.": "P", "--.-": "Q", ".-.": "R",
    "...": "S", "-": "T", "..-": "U", "...-": "V", ".--": "W", "-..-": "X", "-.--": "Y", "--..": "Z",
}  # fmt: skip


def key_runs(x: np.ndarray) -> list[tuple[bool, int]]:
    """Tone on/off runs (samples) from a 2 ms moving average of |x| against half its maximum."""
    win = int(0.002 * SR)
    env = np.convolve(np.abs(x), np.ones(win) / win, mode="same")
    on = env > 0.5 * env.max()
    change = np.flatnonzero(np.diff(on.astype(np.int8))) + 1
    bounds = [0, *change.tolist(), len(on)]
    runs: list[tuple[bool, int]] = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        # a run shorter than the window is ripple of the envelope at a threshold crossing: part of its neighbour
        if runs and (b - a < win or runs[-1][0] == bool(on[a])):
            runs[-1] = (runs[-1][0], runs[-1][1] + b - a)
        else:
            runs.append((bool(on[a]), b - a))
    while runs and not runs[0][0]:
        runs.pop(0)
    while runs and not runs[-1][0]:
        runs.pop()
    return runs


def decode_morse(x: np.ndarray, unit: float) -> str:
    """Decode tones with dot < 2 units <= dash; gaps < 2 units inside a letter, < 5 between letters."""
    text, symbol = "", ""
    for on, length in key_runs(x):
        units = length / unit
        if on:
            symbol += "." if units < 2 else "-"
        elif units >= 2:
            text += MORSE.get(symbol, "?") + (" " if units >= 5 else "")
            symbol = ""
    return text + MORSE.get(symbol, "?")


# ---- AudioCount ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shortcut_free", [False, True])
def test_audio_count_labels_match_counted_onsets(shortcut_free):
    checked = 0
    for ep in episodes("audio_count", shortcut_free=shortcut_free):
        labels = [int(s["label"]) for s in shots(ep)]
        demo_labels = labels[1:]  # with shortcut_free only the demos are distinct; the query count is free
        assert len(set(labels if not shortcut_free else demo_labels)) == len(labels) - shortcut_free
        assert set(labels) <= set(range(1, 9))
        for shot in shots(ep):
            x = samples(shot)
            assert len(x) == 10 * SR
            assert count_onsets(x) == int(shot["label"]), (ep["id"], shot["label"], ep["metadata"]["sound"])
            checked += 1
    assert checked == N_EPISODES * 6


@pytest.mark.slow
def test_audio_count_hard_labels_match_matched_filter_count():
    for ep in episodes("audio_count_hard"):
        template = percussion.render(ep["metadata"]["sound"]["timbre"]).astype(np.float64)
        for shot in shots(ep):
            x = samples(shot)
            peaks = matched_peaks(x, template)
            assert len(peaks) == int(shot["label"]), (ep["id"], shot["label"], len(peaks))
            assert np.allclose(np.array(peaks) / SR, shot["onsets_s"], atol=2e-3)
            # the distractor is really there: the gaps between events are not silent
            quiet = np.ones(len(x), dtype=bool)
            for p in peaks:
                quiet[p : p + len(template)] = False
            assert np.sqrt(np.mean(x[quiet] ** 2)) > 1e-4
            assert 10 <= shot["distractor"]["snr_db"] <= 15


# ---- AudioLength ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_audio_length_labels_are_measured_total_durations():
    for ep in episodes("audio_length"):
        for shot in shots(ep):
            x = samples(shot)
            total = len(x) / SR
            assert int(shot["label"]) == round(total) and abs(total - round(total)) < 1e-9
            silences = zero_runs(x, int(0.1 * SR))
            assert len(silences) == 1, (ep["id"], silences)
            silence = (silences[0][1] - silences[0][0]) / SR
            assert 0.2 - 2 / SR <= silence <= max(0.2, min(1.5, total / 4)) + 2 / SR
            assert not zero_runs(np.delete(x, range(*silences[0])), int(0.005 * SR))


@pytest.mark.slow
def test_audio_length_hard_labels_are_measured_active_durations():
    labels = []
    for ep in episodes("audio_length_hard"):
        for shot in shots(ep):
            x = samples(shot)
            gaps = zero_runs(x, int(0.005 * SR))
            silent = sum(b - a for a, b in gaps)
            active = (len(x) - silent) / SR
            assert int(shot["label"]) == round(active), (ep["id"], shot["label"], active)
            assert abs(active - round(active)) < 3 / SR
            # as the paper describes: several silent gaps inside the clip, splitting the sound into 3-5 segments
            assert 2 <= len(gaps) <= 4 and gaps[0][0] > 0 and gaps[-1][1] < len(x), (ep["id"], gaps)
            labels.append(int(shot["label"]))
    assert min(labels) >= 1 and max(labels) <= 20 and len(set(labels)) > 15
    # the active duration is uniform over 1..20 (the paper's chance 1/20): no label dominates
    assert max(np.bincount(labels)) / len(labels) < 0.09


# ---- AudioOperator ----------------------------------------------------------------------------------------


def _value(operands: list[int], operators: list[str]) -> int:
    text = "".join(f"{a}{op}" for a, op in zip(operands, operators, strict=False)) + str(operands[-1])
    assert re.fullmatch(r"[1-9]([-+*][1-9])+", text)
    return int(eval(text))  # Python's own precedence: x before + and -


def _filler_template(sound: dict) -> np.ndarray:
    x = percussion.render(sound["timbre"]).astype(np.float64)
    energy = np.cumsum(x * x) / np.sum(x * x)
    return x[: int(np.searchsorted(energy, 0.99)) + 1]


@pytest.mark.slow
@pytest.mark.parametrize("config", ["audio_operator", "audio_operator_hard"])
def test_audio_operator_labels_recomputed_from_metadata_and_fillers_found_in_audio(config):
    for ep in episodes(config):
        mapping = {m["sound"]["timbre"]: m["operator"] for m in ep["metadata"]["operator_of_filler"]}
        templates = {
            op: _filler_template(m["sound"])
            for m in ep["metadata"]["operator_of_filler"]
            for op in [m["operator"]]
        }
        if config == "audio_operator":
            assert len(mapping) == 1
        else:
            assert sorted(mapping.values()) in (["*", "+"], ["*", "-"])
        expressions = [s["expression"] for s in shots(ep)]
        assert len(set(expressions)) == len(expressions)
        for shot in shots(ep):
            ops, operands = shot["operators"], shot["operands"]
            assert set(ops) <= set(mapping.values()) and all(1 <= a <= 9 for a in operands)
            assert len(operands) == (2 if config == "audio_operator" else 3)
            value = _value(operands, ops)
            assert value >= 0 and shot["label"] == str(value)
            assert shot["label"] in shot["candidates"]
            x = samples(shot)
            positions = []
            for op in ops:
                found = matched_peaks(x, templates[op], threshold=0.8)
                assert len(found) == ops.count(op), (ep["id"], shot["expression"], op, found)
                positions.append(found[0] if ops.count(op) == 1 else None)
            if len(ops) == 2 and None not in positions:
                assert positions[0] < positions[1]  # the filler heard first is the first operator


@pytest.mark.slow
def test_audio_operator_hard_first_demo_shows_that_x_binds_tighter_than_plus_and_minus():
    for ep in episodes("audio_operator_hard"):
        demo = ep["demos"][0]
        left_to_right = demo["operands"][0]
        for op, value in zip(demo["operators"], demo["operands"][1:], strict=True):
            left_to_right = int(eval(f"{left_to_right}{op}{value}"))
        # the label follows the usual precedence, and reading left to right would give another number
        assert int(demo["label"]) == _value(demo["operands"], demo["operators"]) != left_to_right, ep["id"]
        assert demo["left_to_right"] == left_to_right


# ---- AudioRemap -------------------------------------------------------------------------------------------


def segment_letters(mix: np.ndarray, anchors: dict[str, np.ndarray], gaps: bool = False) -> str:
    """Walk through the MIX: at each position take the anchor that correlates best, then skip its length.
    With `gaps`, digital silence may precede a segment: each anchor is tried where the silence ends, less
    the anchor's own leading zeros."""
    out, position = "", 0
    while position < len(mix) - 1:
        sound = position
        while gaps and out and sound < len(mix) and mix[sound] == 0:
            sound += 1
        scores, starts = {}, {}
        for letter, a in anchors.items():
            start = max(position, sound - int(np.argmax(a != 0))) if gaps else position
            window = mix[start : start + len(a)]
            if len(window) == len(a):
                scores[letter] = float(window @ a / (np.linalg.norm(window) * np.linalg.norm(a) + 1e-12))
                starts[letter] = start
        letter = max(scores, key=scores.get)
        assert scores[letter] > 0.99
        out += letter
        position = starts[letter] + len(anchors[letter])
    assert position == len(mix)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("shortcut_free", [False, True])
def test_audio_remap_labels_match_segments_found_by_correlation(shortcut_free):
    for ep in episodes("audio_remap", shortcut_free=shortcut_free):
        letters = ep["metadata"]["letters"]
        assert letters["A"] != letters["B"]
        patterns = [d["label"] for d in ep["demos"]]
        assert len(set(patterns)) == len(patterns)
        for shot in shots(ep):
            a, b, mix = shot["clips"]
            assert (a["role"], b["role"], mix["role"]) == ("A", "B", "MIX")
            anchors = {
                a["label"]: a["audio"].samples.astype(np.float64),
                b["label"]: b["audio"].samples.astype(np.float64),
            }
            mix_samples = mix["audio"].samples.astype(np.float64)
            assert segment_letters(mix_samples, anchors, gaps=shortcut_free) == shot["label"]


# ---- Morse ------------------------------------------------------------------------------------------------


def _timing_from_bank(ep: dict) -> tuple[float, float]:
    """(unit, bias) in samples from the bank: E is one dot (1 unit), T one dash (3 units); the measured tone
    length is units * unit + bias (bias < 0: the tone edges are ramped)."""
    bank = {c["label"]: c["audio"].samples.astype(np.float64) for c in ep["context"]}
    assert sorted(bank) == [chr(c) for c in range(65, 91)]
    (e_on, e_len), *e_rest = key_runs(bank["E"])
    (t_on, t_len), *t_rest = key_runs(bank["T"])
    assert e_on and t_on and not e_rest and not t_rest
    unit = (t_len - e_len) / 2
    return unit, e_len - unit


@pytest.mark.parametrize(
    ("config", "shortcut_free"), [("morse_code", False), ("morse_letter", False), ("morse_letter", True)]
)
def test_morse_labels_decoded_from_tone_timing(config, shortcut_free):
    for ep in episodes(config, shortcut_free=shortcut_free):
        unit, bias = _timing_from_bank(ep)
        assert abs(unit / SR - 1.2 / ep["metadata"]["morse"]["wpm"]) < 1e-3
        for clip in ep["context"]:
            assert decode_morse(clip["audio"].samples.astype(np.float64), unit) == clip["label"]
        for shot in shots(ep):
            decoded = decode_morse(samples(shot), unit)
            assert decoded.lower() == shot["label"].lower(), (ep["id"], decoded, shot["label"])
            if config == "morse_code":
                assert re.fullmatch(r"[a-z]{5}", shot["label"])
            # shortcut_free keys the MorseLetter query at another speed: its own unit, from its stated wpm
            shot_unit = SR * 1.2 / shot["wpm"] if "wpm" in shot else unit
            for on, length in key_runs(samples(shot)):
                units = (length - bias) / shot_unit if on else (length + bias) / shot_unit
                assert min(abs(units - u) for u in ((1, 3) if on else (1, 3, 7))) < 0.1, (on, units)
        words = [s["label"] for s in shots(ep)][shortcut_free:]  # shortcut_free: the query's letter is free
        assert len(set(words)) == len(words)


# ---- AnomalyDetect ----------------------------------------------------------------------------------------


def _features(x: np.ndarray) -> np.ndarray:
    """Band log-energies (mean and spread over time) and the kurtosis of the first difference."""
    f, _, z = stft(x, fs=SR, nperseg=512, noverlap=256)
    power = np.abs(z) ** 2
    edges = np.geomspace(50, SR / 2, 33)
    bands = np.array(
        [power[(f >= lo) & (f < hi)].sum(axis=0) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    )
    level = 10 * np.log10(bands + 1e-12)
    d = np.diff(x)
    return np.concatenate(
        [level.mean(axis=1), level.std(axis=1), [10 * np.log10(np.mean(d**4) / np.mean(d**2) ** 2)]]
    )


def _detect(ep: dict, k: int) -> str:
    """Nearest-normal-demo distance against a threshold set between the demos' own distances."""
    normal = np.array([_features(samples(d, 0)) for d in ep["demos"][:k]])
    anomalous = np.array([_features(samples(d, 1)) for d in ep["demos"][:k]])
    scale = np.maximum(normal.std(axis=0), 0.5)

    def distance(v: np.ndarray, skip: int | None = None) -> float:
        return min(np.linalg.norm((v - n) / scale) for i, n in enumerate(normal) if i != skip)

    inside = [distance(n, i) for i, n in enumerate(normal)]
    outside = [distance(a) for a in anomalous]
    threshold = (max(inside) + min(outside)) / 2
    return "Anomalous" if distance(_features(samples(ep["query"]))) > threshold else "Normal"


@pytest.mark.slow
def test_anomaly_labels_are_consistent_and_detectable_when_faults_are_strong():
    from audioeval.benchmarks.audioicl_bench.sounds.machines import APPLICABLE_ANOMALIES

    eps = episodes("anomaly_detect", max_shots=3, anomaly_seconds=2.0, anomaly_strength_db=0.0)
    correct, anomalous_queries = 0, 0
    for ep in eps:
        machine = ep["metadata"]["machine"]
        for demo in ep["demos"]:
            (normal, n_info), (faulty, a_info) = zip(demo["clips"], demo["recordings"], strict=True)
            assert (normal["label"], faulty["label"]) == ("Normal", "Anomalous")
            assert n_info["anomaly"] is None and a_info["anomaly"] in APPLICABLE_ANOMALIES[machine]
        info = ep["query"]["recordings"][0]
        assert (info["anomaly"] is not None) == (ep["query"]["label"] == "Anomalous")
        anomalous_queries += ep["query"]["label"] == "Anomalous"
        correct += _detect(ep, 3) == ep["query"]["label"]
    assert 15 <= anomalous_queries <= 35
    assert correct / len(eps) >= 0.9, correct
