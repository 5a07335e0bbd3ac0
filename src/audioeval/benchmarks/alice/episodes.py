"""ALICE episodes (one test item + its demonstrations) and their Hub row layouts.

Episode fields beyond the harness contract:
    query: task_text, constraint_text, choices
    demos: task_text, constraint_text (aligned), answer (the formatted assistant turn; also the demo label),
           pool_id
    metadata: task, category, instruction_id, kwargs, sub_category, mmau_category, uid, demo_ids, shuffle_seed,
              source (file and line, or the synthesis recipe)

Hub layout: a task config row is one test item with its audio and its ordered demonstration list
(pool ids and aligned texts; the k-shot set is the first k); the `demo_pool` config holds each demonstration
once with its audio.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import datasets

from audioeval.audio.wav import decode_wav, encode_wav
from audioeval.benchmarks.alice.demos import SHUFFLE_BASE, align, demo_order
from audioeval.benchmarks.alice.items import PoolEntry, TestItem
from audioeval.types import AudioClip


def _clip(samples: Any, sampling_rate: int, role: str, label: str | None) -> dict[str, Any]:
    # a fresh AudioClip per placement: the renderer tells clips apart by object
    return {"role": role, "label": label, "audio": AudioClip.from_array(samples, sampling_rate)}


def make_episode(
    item: TestItem,
    index: int,
    pool: list[PoolEntry],
    *,
    seed: int,
    max_shots: int,
    sampling_rate: int,
    align_demos: bool,
) -> dict[str, Any]:
    order = demo_order(len(pool), seed, item.rank)[:max_shots]
    demos = []
    for j in order:
        entry = pool[j]
        constraint, answer = align(entry, item) if align_demos else (entry.constraint_text, entry.answer)
        samples = entry.audio.load(sampling_rate)
        demos.append(
            {
                "clips": [_clip(samples, sampling_rate, "demo", entry.answer_plain)],
                "label": answer,
                "answer": answer,
                "task_text": entry.task_text,
                "constraint_text": constraint,
                "pool_id": entry.pool_id,
            }
        )
    query_samples = item.audio.load(sampling_rate)
    return {
        "id": item.uid,
        "index": index,
        "context": [],
        "demos": demos,
        "query": {
            "clips": [_clip(query_samples, sampling_rate, "query", item.label)],
            "label": item.label,
            "task_text": item.task_text,
            "constraint_text": item.constraint_text,
            "choices": list(item.choices),
        },
        "metadata": {
            "uid": item.uid,
            "task": item.task,
            "category": item.category,
            "instruction_id": item.instruction_id,
            "kwargs": dict(item.kwargs),
            "mmau_category": item.mmau_category,
            "sub_category": item.sub_category,
            "demo_ids": [pool[j].pool_id for j in order],
            "shuffle_seed": SHUFFLE_BASE + seed + item.rank,
            "source": item.source,
        },
    }


def item_features(sampling_rate: int) -> datasets.Features:
    return datasets.Features(
        {
            "id": datasets.Value("string"),
            "index": datasets.Value("int32"),
            "task": datasets.Value("string"),
            "category": datasets.Value("string"),
            "sub_category": datasets.Value("string"),
            "instruction_id": datasets.Value("string"),
            "kwargs": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=sampling_rate),
            "instruction": datasets.Value("string"),
            "task_text": datasets.Value("string"),
            "constraint_text": datasets.Value("string"),
            "label": datasets.Value("string"),
            "choices": datasets.List(datasets.Value("string")),
            "demos": datasets.List(
                {
                    "pool_id": datasets.Value("string"),
                    "task_text": datasets.Value("string"),
                    "constraint_text": datasets.Value("string"),
                    "answer": datasets.Value("string"),
                }
            ),
            "metadata": datasets.Value("string"),
        }
    )


def item_row(episode: dict[str, Any]) -> dict[str, Any]:
    query, meta = episode["query"], episode["metadata"]
    clip: AudioClip = query["clips"][0]["audio"]
    instruction = query["task_text"] + ("\n" + query["constraint_text"] if query["constraint_text"] else "")
    return {
        "id": episode["id"],
        "index": int(episode["index"]),
        "task": meta["task"],
        "category": meta["category"],
        "sub_category": meta["sub_category"],
        "instruction_id": meta["instruction_id"],
        "kwargs": json.dumps(meta["kwargs"], ensure_ascii=False, sort_keys=True),
        "audio": {"bytes": encode_wav(clip.samples, clip.sampling_rate), "path": None},
        "instruction": instruction,
        "task_text": query["task_text"],
        "constraint_text": query["constraint_text"],
        "label": query["label"],
        "choices": list(query["choices"]),
        "demos": [
            {
                "pool_id": d["pool_id"],
                "task_text": d["task_text"],
                "constraint_text": d["constraint_text"],
                "answer": d["answer"],
            }
            for d in episode["demos"]
        ],
        "metadata": json.dumps(meta, ensure_ascii=False, sort_keys=True, default=str),
    }


def episode_from_rows(row: dict[str, Any], pool_row: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """Inverse of `item_row`: the episode again, with each demonstration's audio from its `demo_pool` row."""
    demos = []
    for demo in row["demos"]:
        entry = pool_row(demo["pool_id"])
        clip = {"role": "demo", "label": entry["answer_plain"], "audio": _stored_clip(entry["audio"])}
        demos.append({"clips": [clip], "label": demo["answer"], **demo})
    return {
        "id": row["id"],
        "index": int(row["index"]),
        "context": [],
        "demos": demos,
        "query": {
            "clips": [{"role": "query", "label": row["label"], "audio": _stored_clip(row["audio"])}],
            "label": row["label"],
            "task_text": row["task_text"],
            "constraint_text": row["constraint_text"],
            "choices": list(row["choices"] or []),
        },
        "metadata": json.loads(row["metadata"]),
    }


def _stored_clip(audio: dict[str, Any]) -> AudioClip:
    samples, rate = decode_wav(audio["bytes"])
    return AudioClip.from_array(samples, rate)


def pool_features(sampling_rate: int) -> datasets.Features:
    return datasets.Features(
        {
            "pool_id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "category": datasets.Value("string"),
            "instruction_id": datasets.Value("string"),
            "mmau_category": datasets.Value("string"),
            "sub_category": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=sampling_rate),
            "task_text": datasets.Value("string"),
            "constraint_text": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "answer_plain": datasets.Value("string"),
            "source": datasets.Value("string"),
        }
    )


def pool_row(entry: PoolEntry, sampling_rate: int) -> dict[str, Any]:
    task, category, instruction_id, mmau_category, sub_category = entry.key
    clip = AudioClip.from_array(entry.audio.load(sampling_rate), sampling_rate)
    return {
        "pool_id": entry.pool_id,
        "task": task,
        "category": category,
        "instruction_id": instruction_id,
        "mmau_category": mmau_category,
        "sub_category": sub_category,
        "audio": {"bytes": encode_wav(clip.samples, clip.sampling_rate), "path": None},
        "task_text": entry.task_text,
        "constraint_text": entry.constraint_text,
        "answer": entry.answer,
        "answer_plain": entry.answer_plain,
        "source": json.dumps(entry.source, ensure_ascii=False, sort_keys=True, default=str),
    }
