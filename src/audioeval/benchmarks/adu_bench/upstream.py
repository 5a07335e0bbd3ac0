"""Reading the released ADU-Bench folder (Hugging Face `KuofengGao/ADU-Bench`):

    <data_dir>/input/ADU-General/<subset>.jsonl      {"question", "answer", "audio", "source", "category"}
    <data_dir>/input/ADU-Skill/physics.jsonl ...
    <data_dir>/ADU-General/..., ADU-Skill/..., ...   the .wav files the `audio` fields point at

A row's domain is its `category` when that names a domain of the dataset, else its file's stem (physics,
homophones, chinese, ...; unknown stems are kept as they are). Synthetic clips carry their voice and prosody
in the file name (`0017_en_AndrewMultilingualNeural_rate_+10.wav`), which becomes the row's variation.
Every error names the file and line.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from audioeval.audio.dsp import resample
from audioeval.audio.wav import decode_wav
from audioeval.benchmarks.adu_bench.domains import (
    DATASETS,
    LANGUAGES,
    canonical_domain,
    language_of_domain,
    slug,
)
from audioeval.benchmarks.adu_bench.jsonl import read_jsonl
from audioeval.benchmarks.adu_bench.queries import QueryItem
from audioeval.errors import DataError

log = logging.getLogger("audioeval")

_SYNTHETIC = re.compile(
    r"^(?P<num>\d+)_(?P<lang>[a-z]{2})_(?P<voice>[A-Za-z]+Neural)(?:_(?P<param>rate|pitch|volume)_(?P<value>[+-]?\d+))?$"
)


def recorded_variation(audio_path: str) -> dict[str, Any]:
    """What an upstream file name says about how the clip was made."""
    match = _SYNTHETIC.match(Path(audio_path).stem)
    if not match:
        return {"speaker": "recording", "gender": None, "rate": None, "pitch": None, "volume": None}
    levels = {"rate": "standard", "pitch": "standard", "volume": "standard"}
    if match["param"]:
        value = int(match["value"])
        levels[match["param"]] = "standard" if value == 0 else f"{value:+d}%"
    return {"speaker": match["voice"], "gender": None, **levels}


def _resolve_audio(data_dir: Path, dataset: str, jsonl: Path, audio: str, where: str) -> Path:
    raw = Path(audio)
    candidates = (
        [raw]
        if raw.is_absolute()
        else [data_dir / raw, jsonl.parent / raw, data_dir / DATASETS[dataset] / raw]
    )
    for path in candidates:
        if path.is_file():
            return path
    tried = ", ".join(str(c) for c in candidates)
    raise DataError(
        f"{where}: audio file {audio!r} not found (looked at {tried}). Point data_dir at the ADU-Bench folder "
        "that holds input/ and the ADU-* audio folders."
    )


def _row(obj: Any, where: str) -> dict[str, str]:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object per line, got {type(obj).__name__}.")
    out = {}
    for key in ("question", "answer", "audio"):
        value = obj.get(key)
        if not isinstance(value, str) or not value.strip():
            raise DataError(f"{where}: field {key!r} must be a non-empty string, got {value!r}.")
        out[key] = value.strip()
    for key in ("source", "category"):
        value = obj.get(key)
        out[key] = "" if value is None else str(value)
    return out


def read_dataset(data_dir: Path, dataset: str) -> list[QueryItem]:
    """Every row of `input/<ADU-name>/*.jsonl` for one dataset, validated, audio files checked."""
    data_dir = Path(data_dir).expanduser()
    folder = data_dir / "input" / DATASETS[dataset]
    if not folder.is_dir():
        present = (
            sorted(p.name for p in (data_dir / "input").iterdir()) if (data_dir / "input").is_dir() else []
        )
        raise DataError(
            f"data_dir {data_dir}: no folder input/{DATASETS[dataset]}/"
            + (f" (input/ holds {', '.join(present)})" if present else " (there is no input/ folder)")
            + ". Point data_dir at the downloaded ADU-Bench folder."
        )
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise DataError(f"{folder}: no .jsonl question files.")
    items: list[QueryItem] = []
    for path in files:
        items.extend(_read_file(data_dir, dataset, path))
    return items


def _read_file(data_dir: Path, dataset: str, path: Path) -> list[QueryItem]:
    stem_domain = canonical_domain(dataset, path.stem)
    if stem_domain is None:
        log.warning(
            "%s: %r is not a known domain of %s; keeping it as a domain of its own", path, path.stem, dataset
        )
    items = []
    for where, obj in read_jsonl(path):
        row = _row(obj, where)
        domain = canonical_domain(dataset, row["category"]) if row["category"] else None
        domain = domain or stem_domain or slug(path.stem)
        items.append(
            QueryItem(
                item_id=f"{slug(path.stem)}-{int(where.rsplit(':', 1)[1]):05d}",
                dataset=dataset,
                domain=domain,
                language=_language(dataset, domain, row["audio"]),
                question=row["question"],
                reference=row["answer"],
                source=row["source"],
                category=row["category"],
                audio_path=_resolve_audio(data_dir, dataset, path, row["audio"], where),
                recorded_variation=recorded_variation(row["audio"]),
                origin=where,
            )
        )
    return items


def _language(dataset: str, domain: str, audio: str) -> str:
    if dataset != "multilingual":
        return "en"
    code = language_of_domain(domain)
    if code:
        return code
    match = _SYNTHETIC.match(Path(audio).stem)
    return match["lang"] if match and match["lang"] in LANGUAGES else "en"


def load_clip(path: Path, sampling_rate: int, where: str) -> np.ndarray:
    """A WAV file as mono float32 at `sampling_rate`."""
    samples, rate = decode_wav(path.read_bytes(), f"{where} ({path})")
    return resample(samples, rate, sampling_rate)
