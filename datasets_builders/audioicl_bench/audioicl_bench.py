"""AudioICL-Bench episodes (Chen et al., "AudioICL-Bench: A Benchmark for Large Audio Language Model
In-Context Learning"): nine in-context tasks whose rule is resampled per episode, plus the single-letter
Morse ablation.

Configs: audio_count, audio_count_hard, audio_length, audio_length_hard, audio_operator,
audio_operator_hard, audio_remap, morse_code, anomaly_detect, morse_letter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import datasets

from audioeval.benchmarks.audioicl import about, anomaly, count, length, morse, operator, remap
from audioeval.benchmarks.audioicl.common import TASK_IDS, Settings
from audioeval.benchmarks.audioicl.sounds.corpora import (
    DistractorCorpus,
    MachineCorpus,
    OneShotCorpus,
    SpokenDigitCorpus,
)
from audioeval.benchmarks.audioicl.sounds.morse import MorseStyle
from audioeval.benchmarks.audioicl.sources import Digits, Distractors, Machines, OneShots
from audioeval.builders import EpisodeBuilder, EpisodeBuilderConfig
from audioeval.errors import ConfigError, DataError, unknown_name_message

WORD_LIST = Path(__file__).resolve().parent / "words5.txt"

# config -> (generator module, sources it draws from)
TASKS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "audio_count": (count, ("osps_dir",)),
    "audio_count_hard": (count, ("osps_dir", "esc50_dir")),
    "audio_length": (length, ("osps_dir",)),
    "audio_length_hard": (length, ("osps_dir",)),
    "audio_operator": (operator, ("osps_dir", "fsdd_dir")),
    "audio_operator_hard": (operator, ("osps_dir", "fsdd_dir")),
    "audio_remap": (remap, ("osps_dir",)),
    "morse_code": (morse, ("word_list",)),
    "anomaly_detect": (anomaly, ("dcase_dir",)),
    "morse_letter": (morse, ()),
}


@dataclass
class AudioICLConfig(EpisodeBuilderConfig):
    """Builder kwargs. Source folders are optional: without them the built-in procedural sources are used."""

    osps_dir: str | None = None  # One-Shot Percussive Sounds: ROOT/1..5/<id>.wav
    fsdd_dir: str | None = None  # Free Spoken Digit Dataset: ROOT/recordings/<d>_<speaker>_<take>.wav
    fsdd_speaker: str = "jackson"
    esc50_dir: str | None = None  # ESC-50: ROOT/audio/<fold>-<clip>-<take>-<target>.wav
    dcase_dir: str | None = None  # DCASE Task 2 dev: ROOT/<machine>/{train,test}/*_{normal|anomaly}_*.wav
    dcase_machines: str | None = None  # comma list restricting the machine folders used
    word_list: str | None = None  # MorseCode words, one per line (default: the shipped 5-letter list)
    distractor_snr_min_db: float = 10.0
    distractor_snr_max_db: float = 15.0
    anomaly_strength_db: float = -15.0  # RMS of the fault component relative to the machine sound
    anomaly_seconds: float = 10.0
    morse_wpm: float = 20.0
    morse_tone_hz: float = 600.0
    # remove what a model could answer from without analysing the signal (docs/audioicl_bench.md)
    shortcut_free: bool = False


def load_words(path: Path) -> tuple[str, ...]:
    """Words from a text file (one per line, # comments), lower-cased, letters a-z only, de-duplicated."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise DataError(f"word_list={path}: cannot read it ({err.strerror or err}).") from err
    words: list[str] = []
    for number, raw in enumerate(lines, start=1):
        word = raw.strip().lower()
        if not word or word.startswith("#"):
            continue
        if not word.isascii() or not word.isalpha():
            raise DataError(
                f"{path}:{number}: {raw.strip()!r} is not a word of letters a-z (Morse covers A-Z only)."
            )
        if word not in words:
            words.append(word)
    if len(words) < 2:
        raise DataError(f"word_list={path}: needs at least two words, found {len(words)}.")
    return tuple(words)


_DROPOUT = "a dropout can silence part of what the label counts or spells"
# `--augment` transforms that would make a config's label false (see EpisodeBuilder.augmentation_refusal)
LABEL_CHANGING_TRANSFORMS: dict[str, dict[str, str]] = {
    "audio_count": {"time_mask_fraction": _DROPOUT},
    "audio_count_hard": {"time_mask_fraction": _DROPOUT},
    "audio_length": {"time_stretch_rate": "the label is the clip's duration, which a time stretch changes"},
    "audio_length_hard": {
        "time_stretch_rate": "the label is the non-silent duration, which a time stretch changes",
        "time_mask_fraction": "the label is the non-silent duration, which a dropout shortens",
    },
    "audio_operator": {"time_mask_fraction": _DROPOUT},
    "audio_operator_hard": {"time_mask_fraction": _DROPOUT},
    "audio_remap": {"time_mask_fraction": _DROPOUT},
    "morse_code": {"time_mask_fraction": _DROPOUT},
    "morse_letter": {"time_mask_fraction": _DROPOUT},
}


class AudioICLBench(EpisodeBuilder):
    """AudioICL-Bench in-context learning episodes for audio-language models (nine tasks and the single-letter Morse ablation), generated by audioeval from procedural sound sources or from local copies of the original corpora. Each row is one episode: context clips (the Morse A-Z bank), max_shots demonstrations (a k-shot prompt uses the first k), the query, and JSON metadata that justifies the label."""

    BUILDER_CONFIG_CLASS = AudioICLConfig
    ABOUT = about.ABOUT
    BUILDER_CONFIGS = [AudioICLConfig(name=name) for name in TASK_IDS]
    DEFAULT_CONFIG_NAME = "audio_count"
    VERSION = datasets.Version("1.0.0")

    # --- settings -----------------------------------------------------------------------------------------
    def _check_numbers(self) -> None:
        c = self.config
        ints = {"n_episodes": 1, "max_shots": 0, "seed": 0, "sampling_rate": 8000}
        for name, low in ints.items():
            value = getattr(c, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ConfigError(f"{name}={value!r}: expected an integer >= {low}.")
        if c.sampling_rate > 48000:
            raise ConfigError(
                f"sampling_rate={c.sampling_rate}: expected 8000-48000 Hz (16000 as in the paper)."
            )
        floats = {
            "distractor_snr_min_db": (-30.0, 60.0),
            "distractor_snr_max_db": (-30.0, 60.0),
            "anomaly_strength_db": (-60.0, 20.0),
            "anomaly_seconds": (1.0, 60.0),
            "morse_wpm": (5.0, 60.0),
            "morse_tone_hz": (100.0, 0.45 * c.sampling_rate),
        }
        for name, (low, high) in floats.items():
            value = getattr(c, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or not low <= value <= high:
                raise ConfigError(f"{name}={value!r}: expected a number from {low:g} to {high:g}.")
        if not isinstance(c.shortcut_free, bool):
            raise ConfigError(f"shortcut_free={c.shortcut_free!r}: expected true or false.")
        if c.distractor_snr_min_db > c.distractor_snr_max_db:
            raise ConfigError(
                f"distractor_snr_min_db={c.distractor_snr_min_db} exceeds distractor_snr_max_db={c.distractor_snr_max_db}."
            )

    @cached_property
    def settings(self) -> Settings:
        """The generators' view of the config, with the source folders this config uses opened and checked."""
        c = self.config
        if c.name not in TASKS:
            raise ConfigError(unknown_name_message("AudioICL-Bench config", str(c.name), TASKS))
        self._check_numbers()
        used = TASKS[c.name][1]
        oneshots = OneShots(OneShotCorpus(c.osps_dir)) if c.osps_dir and "osps_dir" in used else OneShots()
        digits = (
            Digits(SpokenDigitCorpus(c.fsdd_dir, c.fsdd_speaker))
            if c.fsdd_dir and "fsdd_dir" in used
            else Digits()
        )
        noise = (
            Distractors(DistractorCorpus(c.esc50_dir))
            if c.esc50_dir and "esc50_dir" in used
            else Distractors()
        )
        wanted = [m.strip() for m in (c.dcase_machines or "").split(",") if m.strip()] or None
        machines = (
            Machines(MachineCorpus(c.dcase_dir, wanted))
            if c.dcase_dir and "dcase_dir" in used
            else Machines()
        )
        words = (
            load_words(Path(c.word_list).expanduser() if c.word_list else WORD_LIST)
            if c.name == "morse_code"
            else ()
        )
        for corpus in (oneshots.corpus, digits.corpus, noise.corpus, machines.corpus):
            if corpus is not None:
                corpus.check()
        return Settings(
            task=c.name,
            seed=c.seed,
            max_shots=c.max_shots,
            sampling_rate=c.sampling_rate,
            oneshots=oneshots,
            digits=digits,
            distractors=noise,
            machines=machines,
            distractor_snr_db=(float(c.distractor_snr_min_db), float(c.distractor_snr_max_db)),
            anomaly_strength_db=float(c.anomaly_strength_db),
            anomaly_seconds=float(c.anomaly_seconds),
            morse=MorseStyle(wpm=float(c.morse_wpm), tone_hz=float(c.morse_tone_hz)),
            words=words,
            shortcut_free=c.shortcut_free,
        )

    # --- the EpisodeBuilder contract ---------------------------------------------------------------------
    def validate(self) -> None:
        settings = self.settings
        limit, reason = TASKS[settings.task][0].max_shots(settings)
        if limit is not None and settings.max_shots > limit:
            raise ConfigError(
                f"max_shots={settings.max_shots} is too many for {settings.task}: {reason}, so it supports at most "
                f"{limit} demonstrations. Lower max_shots (and --num_fewshot) to {limit} or less."
            )

    def max_supported_shots(self) -> int | None:
        return TASKS[self.settings.task][0].max_shots(self.settings)[0]

    def augmentation_refusal(self, transform: str) -> str | None:
        return LABEL_CHANGING_TRANSFORMS.get(str(self.config.name), {}).get(transform)

    def episode(self, index: int) -> dict[str, Any]:
        if index < 0:
            raise IndexError(f"episode index must be non-negative, got {index}")
        return TASKS[self.settings.task][0].generate(self.settings, int(index))
