"""ADU-Bench episodes and their Hub rows.

An episode is zero-shot: no demos, one spoken query clip, the reference as its label. The Hub layout is one
flat row per episode with the variation it received as columns, so `load_dataset(DIR, "skill")` shows the
query, its domain and how it was spoken side by side.
"""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np

from audioeval.audio.wav import PCM16_SCALE, decode_wav, encode_wav
from audioeval.benchmarks.adu_bench.queries import QueryItem
from audioeval.types import AudioClip

VARIATION_COLUMNS = ("speaker", "gender", "voice", "rate", "pitch", "volume", "contour", "pause")
TEXT_COLUMNS = (
    "dataset",
    "domain",
    "item_id",
    "language",
    "question",
    "reference",
    "source",
    "category",
    "ambiguity",
)


def make_episode(
    index: int, episode_id: str, item: QueryItem, clip: AudioClip, variation: dict[str, Any]
) -> dict[str, Any]:
    info = describe_item(item, variation)
    return {
        "id": episode_id,
        "index": index,
        "context": [],
        "demos": [],
        "query": {
            "clips": [{"role": "question", "label": None, "audio": clip}],
            "label": item.reference,
            "question": item.question,
            "reference": item.reference,
            "domain": item.domain,
            "language": item.language,
            "variation": variation,
        },
        "metadata": info,
    }


def describe_item(item: QueryItem, variation: dict[str, Any]) -> dict[str, Any]:
    """The JSON-ready facts about one rendering (episode metadata; also what reports group by)."""
    return {
        "dataset": item.dataset,
        "domain": item.domain,
        "language": item.language,
        "item_id": item.item_id,
        "question": item.question,
        "source": item.source,
        "category": item.category,
        "ambiguity": item.ambiguity,
        "variation": variation,
    }


def hub_features(sampling_rate: int) -> datasets.Features:
    columns: dict[str, Any] = {"id": datasets.Value("string"), "index": datasets.Value("int32")}
    columns.update({name: datasets.Value("string") for name in TEXT_COLUMNS})
    columns["audio"] = datasets.Audio(sampling_rate=sampling_rate)
    columns.update({name: datasets.Value("string") for name in VARIATION_COLUMNS})
    return datasets.Features(columns)


def episode_to_row(episode: dict[str, Any]) -> dict[str, Any]:
    meta = episode["metadata"]
    clip: AudioClip = episode["query"]["clips"][0]["audio"]
    row: dict[str, Any] = {"id": episode["id"], "index": int(episode["index"])}
    row.update({name: meta.get(name) for name in TEXT_COLUMNS if name != "reference"})
    row["reference"] = episode["query"]["reference"]
    row["audio"] = {"bytes": encode_wav(clip.samples, clip.sampling_rate), "path": None}
    variation = meta.get("variation") or {}
    row.update({name: _str_or_none(variation.get(name)) for name in VARIATION_COLUMNS})
    return row


def row_to_episode(row: dict[str, Any]) -> dict[str, Any]:
    """Inverse of `episode_to_row` for rows read back with `datasets.load_dataset`."""
    audio = row["audio"]
    if isinstance(audio, dict) and audio.get("bytes") is not None:
        samples, rate = decode_wav(audio["bytes"])
    else:  # a datasets AudioDecoder (torchcodec), which scales PCM16 by 1/32768
        decoded = audio.get_all_samples()
        pcm = np.round(decoded.data.numpy().mean(axis=0) * 32768.0)
        samples, rate = pcm / PCM16_SCALE, decoded.sample_rate  # back on the harness's 16-bit grid
    item = QueryItem(
        item_id=row["item_id"],
        dataset=row["dataset"],
        domain=row["domain"],
        language=row["language"],
        question=row["question"],
        reference=row["reference"],
        source=row.get("source") or "",
        category=row.get("category") or "",
    )
    variation = {name: row.get(name) for name in VARIATION_COLUMNS}
    return make_episode(int(row["index"]), row["id"], item, AudioClip.from_array(samples, rate), variation)


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
