"""Loaders for local copies of the real corpora AudioICL-Bench was built from. Each checks its folder
layout when created and names what is missing, and `check_readable()` opens every file's header, so a bad
folder fails before any episode is generated.

- One-Shot Percussive Sounds (Zenodo): ROOT/{1..5}/<id>.wav (any depth below ROOT is accepted)
- Free Spoken Digit Dataset: ROOT/recordings/<digit>_<speaker>_<take>.wav (or the files directly in ROOT)
- ESC-50: ROOT/audio/<fold>-<clip>-<take>-<target>.wav; AudioCountHard uses targets 0-10
- DCASE Task 2 development sets (ToyADMOS2 / MIMII DG layout):
  ROOT/<machine>/{train,test}/section_XX_..._{normal|anomaly}_....wav
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import numpy as np

from audioeval.audio.distractors import CATEGORIES as ESC50_CATEGORIES
from audioeval.audio.dsp import resample
from audioeval.errors import DataError

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
ESC50_DISTRACTOR_TARGETS = tuple(range(11))  # dog ... crow, and 10 = rain
ESC50_CATEGORY_NAMES = ESC50_CATEGORIES  # the synthesized distractors mirror these classes


def _root(path: str | Path, field: str, corpus: str) -> Path:
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataError(f"{field}={path}: no such folder. Point it at a local copy of {corpus}.")
    return root.resolve()


def _audio_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file())


def check_readable(paths: Iterable[Path], field: str) -> None:
    """Open the header of every file; raise DataError naming the unreadable ones."""
    import soundfile

    bad = []
    for path in paths:
        try:
            info = soundfile.info(str(path))
            if info.frames <= 0:
                bad.append(f"{path} (no samples)")
        except (RuntimeError, OSError, soundfile.LibsndfileError) as err:
            bad.append(f"{path} ({str(err).splitlines()[0][:80]})")
    if bad:
        shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise DataError(f"{field}: {len(bad)} unreadable audio file(s): {shown}. Replace or remove them.")


@lru_cache(maxsize=4096)
def _load(path: str, sampling_rate: int) -> np.ndarray:
    import soundfile

    try:
        data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    except (RuntimeError, OSError, soundfile.LibsndfileError) as err:
        raise DataError(f"{path}: cannot read audio ({err}).") from err
    out = resample(data.mean(axis=1), int(rate), sampling_rate)
    out.setflags(write=False)
    return out


def load_audio(path: Path, sampling_rate: int) -> np.ndarray:
    """Mono float32 at `sampling_rate` (channels averaged, resampled with a polyphase filter)."""
    return _load(str(path), int(sampling_rate))


class OneShotCorpus:
    """One-Shot Percussive Sounds: every audio file below ROOT (files named MIX__* are skipped)."""

    field = "osps_dir"

    def __init__(self, path: str | Path) -> None:
        self.root = _root(path, self.field, "One-Shot Percussive Sounds (zenodo.org/record/3665275)")
        self.files = [p for p in _audio_files(self.root) if not p.name.startswith("MIX__")]
        if len(self.files) < 2:
            raise DataError(
                f"{self.field}={self.root}: found {len(self.files)} audio file(s); expected the corpus layout "
                "ROOT/1..5/<id>.wav with at least two sounds."
            )

    def check(self) -> None:
        check_readable(self.files, self.field)

    def __len__(self) -> int:
        return len(self.files)

    def describe(self, i: int) -> dict[str, str]:
        return {"source": "osps", "file": self.files[i].relative_to(self.root).as_posix()}

    def load(self, i: int, sampling_rate: int) -> np.ndarray:
        return load_audio(self.files[i], sampling_rate)


_FSDD_NAME = re.compile(r"^(\d)_([A-Za-z]+)_(\d+)\.wav$")


class SpokenDigitCorpus:
    """Free Spoken Digit Dataset recordings of one speaker."""

    field = "fsdd_dir"

    def __init__(
        self, path: str | Path, speaker: str = "jackson", digits: Iterable[int] = range(1, 10)
    ) -> None:
        self.root = _root(
            path,
            self.field,
            "the Free Spoken Digit Dataset (github.com/Jakobovski/free-spoken-digit-dataset)",
        )
        folder = self.root / "recordings" if (self.root / "recordings").is_dir() else self.root
        self.speaker = speaker
        self.takes: dict[int, list[Path]] = defaultdict(list)
        speakers = set()
        for p in sorted(folder.glob("*.wav")):
            m = _FSDD_NAME.match(p.name)
            if m:
                speakers.add(m.group(2))
                if m.group(2) == speaker:
                    self.takes[int(m.group(1))].append(p)
        missing = [d for d in digits if not self.takes.get(d)]
        if missing:
            known = f" Speakers found: {', '.join(sorted(speakers))}." if speakers else ""
            raise DataError(
                f"{self.field}={self.root}: no recordings {folder}/<digit>_{speaker}_<take>.wav for digit(s) "
                f"{', '.join(map(str, missing))}.{known} Set fsdd_speaker or complete the folder."
            )

    def check(self) -> None:
        check_readable([p for ps in self.takes.values() for p in ps], self.field)

    def draw(
        self, digit: int, rng: np.random.Generator, sampling_rate: int
    ) -> tuple[np.ndarray, dict[str, str]]:
        files = self.takes[digit]
        path = files[int(rng.integers(len(files)))]
        return load_audio(path, sampling_rate), {"source": "fsdd", "file": path.name}


_ESC50_NAME = re.compile(r"^(\d+)-(\d+)-([A-Za-z])-(\d+)\.wav$")


class DistractorCorpus:
    """ESC-50 clips of classes 0-10 (nine animals, insects and rain)."""

    field = "esc50_dir"

    def __init__(self, path: str | Path, targets: Iterable[int] = ESC50_DISTRACTOR_TARGETS) -> None:
        self.root = _root(path, self.field, "ESC-50 (github.com/karolpiczak/ESC-50)")
        folder = self.root / "audio"
        if not folder.is_dir():
            raise DataError(
                f"{self.field}={self.root}: no audio/ folder; expected ESC-50's ROOT/audio/*.wav."
            )
        wanted = set(targets)
        self.files = [
            p
            for p in sorted(folder.glob("*.wav"))
            if (m := _ESC50_NAME.match(p.name)) and int(m.group(4)) in wanted
        ]
        if not self.files:
            raise DataError(
                f"{self.field}={self.root}: no audio/<fold>-<clip>-<take>-<target>.wav files with target in "
                f"{sorted(wanted)} (dog ... rain)."
            )

    def check(self) -> None:
        check_readable(self.files, self.field)

    def draw(self, rng: np.random.Generator, sampling_rate: int) -> tuple[np.ndarray, dict[str, str]]:
        path = self.files[int(rng.integers(len(self.files)))]
        target = int(_ESC50_NAME.match(path.name).group(4))  # type: ignore[union-attr]
        return load_audio(path, sampling_rate), {
            "source": "esc50",
            "file": path.name,
            "category": ESC50_CATEGORY_NAMES[target] if target < len(ESC50_CATEGORY_NAMES) else str(target),
        }


def check_esc50_listing(root: str | Path) -> None:
    """Every clip ESC-50's meta/esc50.csv lists is in audio/ (the release publishes no checksums)."""
    import csv

    root = Path(root)
    listing = root / "meta" / "esc50.csv"
    if not listing.is_file():
        raise DataError(f"esc50_dir={root}: no meta/esc50.csv; expected the ESC-50 release layout.")
    with listing.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "filename" not in rows[0]:
        raise DataError(f"{listing}: expected a CSV with a `filename` column listing the clips.")
    missing = [r["filename"] for r in rows if not (root / "audio" / r["filename"]).is_file()]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise DataError(
            f"esc50_dir={root}: {len(missing)} clip(s) listed in meta/esc50.csv are missing from audio/: {shown}."
        )


class MachineCorpus:
    """DCASE Task 2 development data: normal recordings (train and test) and anomalous ones (test)."""

    field = "dcase_dir"

    def __init__(self, path: str | Path, machines: Iterable[str] | None = None) -> None:
        self.root = _root(path, self.field, "the DCASE Task 2 development sets")
        self.normal: dict[str, list[Path]] = {}
        self.anomalous: dict[str, list[Path]] = {}
        wanted = set(machines) if machines else None
        for machine_dir in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if wanted is not None and machine_dir.name not in wanted:
                continue
            files = [
                p
                for sub in ("train", "test")
                if (machine_dir / sub).is_dir()
                for p in sorted((machine_dir / sub).glob("*.wav"))
            ]
            normal = [p for p in files if "_normal_" in p.name]
            anomalous = [p for p in files if "_anomaly_" in p.name]
            if normal or anomalous:
                self.normal[machine_dir.name] = normal
                self.anomalous[machine_dir.name] = anomalous
        if wanted is not None and (absent := sorted(wanted - set(self.normal))):
            raise DataError(
                f"{self.field}={self.root}: no machine folder(s) {', '.join(absent)} with train/ or test/ WAVs."
            )
        if not self.normal:
            raise DataError(
                f"{self.field}={self.root}: no machine folders; expected ROOT/<machine>/{{train,test}}/"
                "section_00_..._{normal|anomaly}_....wav (the DCASE 2023-2025 Task 2 development layout)."
            )
        empty = [m for m in self.normal if not self.normal[m] or not self.anomalous[m]]
        if empty:
            raise DataError(
                f"{self.field}={self.root}: machine(s) {', '.join(empty)} lack normal or anomalous recordings; "
                "anomalous ones come from test/*_anomaly_*.wav. Add the test split or remove the folder."
            )

    @property
    def machines(self) -> list[str]:
        return sorted(self.normal)

    def max_shots(self) -> tuple[int, str]:
        """The largest k every machine supports (k demos of each label plus a query), and which machine limits it."""
        limits = {m: min(len(self.normal[m]), len(self.anomalous[m])) - 1 for m in self.machines}
        machine = min(limits, key=lambda m: limits[m])
        return limits[machine], machine

    def check(self) -> None:
        check_readable([p for m in self.machines for p in self.normal[m] + self.anomalous[m]], self.field)

    def describe(self, path: Path) -> dict[str, str]:
        return {"source": "dcase", "file": path.relative_to(self.root).as_posix()}
